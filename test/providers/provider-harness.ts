/** Shared pieces for provider tests: an in-process simulator, adapters pointed at it, stream helpers. */
import { afterAll, afterEach, beforeAll, beforeEach } from '@jest/globals';
import { createProviderAdapter } from '../../activities/providers/index.ts';
import {
  ProviderError,
  type ProviderAdapter,
  type ProviderConfig,
  type WireProtocol,
} from '../../activities/providers/types.ts';
import type { ChatMessage, Tool } from '../../common/chat.ts';
import type { StreamPart } from '../../common/stream-parts.ts';
import {
  simulatorControl,
  startSimulator,
  type RunningSimulator,
  type SimulatorControl,
} from '../../simulator/server.ts';

export const protocols: WireProtocol[] = ['openai', 'anthropic', 'gemini'];

export const weatherTool: Tool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string' },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        days: { type: 'integer' },
        detailed: { type: 'boolean' },
      },
      required: ['city', 'unit', 'days', 'detailed'],
      additionalProperties: false,
    },
  },
};

export const timeTool: Tool = {
  type: 'function',
  function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } } } },
};

/** The arguments the simulator derives from weatherTool's schema. */
export const weatherArguments = { city: 'sample city', unit: 'celsius', days: 1, detailed: true };

export interface ProviderHarness {
  simulator: RunningSimulator;
  control: SimulatorControl;
  /** An adapter for `protocol` pointed at the simulator; `overrides` replace config fields. */
  adapter(protocol: WireProtocol, overrides?: Partial<ProviderConfig>): ProviderAdapter;
  close(): Promise<void>;
}

/** Starts a simulator on an ephemeral port for one test file. */
export async function startProviderHarness(): Promise<ProviderHarness> {
  const simulator = await startSimulator();
  return {
    simulator,
    control: simulatorControl(simulator.url),
    adapter: (protocol, overrides = {}) =>
      createProviderAdapter({
        provider: protocol,
        protocol,
        baseUrl: protocol === 'openai' ? `${simulator.url}/v1` : simulator.url,
        apiKey: 'test-key',
        ...overrides,
      }),
    close: () => simulator.close(),
  };
}

/** What a test file clears between its tests: the simulator's request log, its faults. */
export type HarnessReset = 'requests' | 'faults';

/**
 * The harness of a test file: started before its tests and closed after them (the hooks registered here), with what
 * `resets` names cleared before or after each test, in that order. Its fields are the started harness's, so read
 * them inside tests and hooks.
 */
export function useProviderHarness(
  resets: { beforeEach?: HarnessReset[]; afterEach?: HarnessReset[] } = {},
): ProviderHarness {
  let started: ProviderHarness | undefined;
  const current = () => {
    if (!started) throw new Error('the provider harness starts in beforeAll: use it inside a test or a hook');
    return started;
  };
  const clear = async (what: HarnessReset[]) => {
    for (const reset of what) {
      if (reset === 'faults') await current().control.clearFaults();
      else await current().control.resetRequests();
    }
  };
  beforeAll(async () => {
    started = await startProviderHarness();
  });
  if (resets.beforeEach) beforeEach(() => clear(resets.beforeEach!));
  if (resets.afterEach) afterEach(() => clear(resets.afterEach!));
  afterAll(async () => {
    await started?.close();
  });
  return {
    get simulator() {
      return current().simulator;
    },
    get control() {
      return current().control;
    },
    adapter: (protocol, overrides) => current().adapter(protocol, overrides),
    close: () => current().close(),
  };
}

/** Reads a whole stream. */
export async function collect(stream: AsyncIterable<StreamPart>): Promise<StreamPart[]> {
  const parts: StreamPart[] = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

/** Reads a stream that is expected to fail: the parts before the failure and the ProviderError. */
export async function collectUntilFailure(
  stream: AsyncIterable<StreamPart>,
): Promise<{ parts: StreamPart[]; error: ProviderError }> {
  const parts: StreamPart[] = [];
  try {
    for await (const part of stream) parts.push(part);
  } catch (error) {
    if (error instanceof ProviderError) return { parts, error };
    throw error;
  }
  throw new Error(`stream ended without failing after ${parts.length} parts`);
}

/** The ProviderError a promise rejects with. */
export async function failureOf(promise: Promise<unknown>): Promise<ProviderError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ProviderError) return error;
    throw error;
  }
  throw new Error('expected a ProviderError, but the call succeeded');
}

/** The text of a stream's text deltas. */
export function textOf(parts: StreamPart[]): string {
  return parts.map((part) => (part.type === 'text-delta' ? part.text : '')).join('');
}

/** A stream's tool-call deltas, in order. */
export function toolCallParts(parts: StreamPart[]): Array<Extract<StreamPart, { type: 'tool-call-delta' }>> {
  return parts.filter((part) => part.type === 'tool-call-delta');
}

/** The expected prompt token count for the simulator: a quarter of the prompt's characters, rounded up. */
export function promptTokensFor(...texts: string[]): number {
  return Math.ceil(texts.join('').length / 4);
}

/**
 * An adapter whose upstream answers every call with the given SSE text, for stream edge cases the simulator
 * does not produce. No network: the fetch is a stub.
 */
export function adapterReplaying(
  config: Pick<ProviderConfig, 'provider' | 'protocol' | 'baseUrl' | 'apiKey'>,
  sseText: string,
): ProviderAdapter {
  const fetchStub: typeof fetch = async () =>
    new Response(sseText, { status: 200, headers: { 'content-type': 'text/event-stream' } });
  return createProviderAdapter({ ...config, fetch: fetchStub });
}

/** A 1×1 transparent PNG, base64. */
export const pixelPng =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

/** A user message with text and two images: a data URL and an https URL. */
export const imageMessage: ChatMessage = {
  role: 'user',
  content: [
    { type: 'text', text: 'What is in these?' },
    { type: 'image_url', image_url: { url: `data:image/png;base64,${pixelPng}` } },
    { type: 'image_url', image_url: { url: 'https://images.example.com/cat.webp', detail: 'low' } },
  ],
};
