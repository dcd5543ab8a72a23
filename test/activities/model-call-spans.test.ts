/**
 * Model-call spans without a platform (the whole trace: test/api/tracing.test.ts): the prompt and the answer are on a
 * span only with the operator's opt-in; and tracing is on only when an OTLP endpoint is named.
 */
import { expect, it } from '@jest/globals';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { startModelCallSpan } from '../../activities/model-call-spans.ts';
import type { ProviderCallInput } from '../../activities/provider-calls.ts';
import { startTracing, tracesEndpoint } from '../../process/tracing.ts';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer('test');

const input: ProviderCallInput = {
  requestId: 'chatcmpl-test',
  attempt: 2,
  failover: true,
  userId: 'user_1',
  metered: true,
  candidate: {
    model: 'claude-haiku-4-5',
    provider: 'anthropic',
    upstreamModel: 'claude-haiku-4-5-20251001',
    tier: 'fast',
    price: { input_per_1m: 1, output_per_1m: 5 },
    probe: false,
    creditRate: 2,
  },
  request: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'a secret prompt' }], temperature: 0.2 },
};

const succeeded = {
  outcome: 'succeeded' as const,
  latencyMs: 12,
  finishReason: 'stop' as const,
  usage: { prompt_tokens: 10, completion_tokens: 490, total_tokens: 500 },
  usageEstimated: false,
  message: { content: 'a secret answer', toolCalls: [] },
};

it('records the GenAI attributes, and the text only when the operator opts in', () => {
  exporter.reset();
  startModelCallSpan({ tracer, captureContent: false }, input).end(succeeded);
  startModelCallSpan({ tracer, captureContent: true }, input).end(succeeded);
  const [plain, captured] = exporter.getFinishedSpans();
  expect(plain?.name).toBe('chat claude-haiku-4-5-20251001');
  expect(plain?.attributes).toMatchObject({
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'anthropic',
    'gen_ai.request.model': 'claude-haiku-4-5-20251001',
    'gen_ai.request.temperature': 0.2,
    'gen_ai.response.finish_reasons': ['stop'],
    'gen_ai.usage.input_tokens': 10,
    'gen_ai.usage.output_tokens': 490,
    'tessera.attempt': 2,
    'tessera.failover': true,
    'tessera.account': 'user_1',
    'tessera.credits': 1,
  });
  expect(JSON.stringify(plain?.attributes)).not.toContain('secret');
  expect(JSON.parse(String(captured?.attributes['gen_ai.input.messages']))).toEqual(input.request.messages);
  expect(String(captured?.attributes['gen_ai.output.messages'])).toContain('a secret answer');
});

it('is on only when an OTLP endpoint is named, and starts nothing otherwise', async () => {
  expect(tracesEndpoint({})).toBeNull();
  expect(tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toBe(
    'http://collector:4318/v1/traces',
  );
  expect(
    tracesEndpoint({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example.com/otlp',
    }),
  ).toBe('https://traces.example.com/otlp');
  expect(
    tracesEndpoint({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }),
  ).toBeNull();
  expect(await startTracing({})).toBeNull();
});
