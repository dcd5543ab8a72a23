/**
 * `delegate_to_agent`: hands a message to an external A2A agent and returns its answer, with the official
 * `@a2a-js/sdk` client (`message/stream` over JSON-RPC, v1.0 or v0.3 as the remote card declares). The agent is a
 * name from A2A_REMOTE_AGENTS (`name=<card URL>`) or a card URL the model gives. The card and every request go through
 * checkedFetch (activities/net/checked-fetch.ts): public addresses only, no redirects, FETCH_ALLOWED_HOSTS excepted,
 * so a card at a private address is refused. Cards (the SDK client built from one) are cached per URL for five
 * minutes in the worker. It runs as the turn's tool activity and reports as it goes (`tool_progress` on the caller's
 * stream): the remote task's id first, then the remote answer's text as it streams. A call run again after its worker
 * died finds that id among its earlier progress and resubscribes to the same remote task (`tasks/resubscribe`)
 * instead of starting another. The turn's cancellation cancels the remote task. The answer is the remote task's
 * artifact text and final status message. Agents only.
 */
import { Role, TaskState, type Part, type StreamResponse } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import type { Client } from '@a2a-js/sdk/client';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { checkedFetch } from '../net/checked-fetch.ts';
import { FetchGuardError } from '../net/url-guard.ts';
import { defineTool, ToolError } from './tool.ts';

const cardTtlMs = 5 * 60_000;
const clients = new Map<string, { client: Promise<Client>; at: number }>();

function clientFor(cardUrl: string, allowedHosts: string[]): Promise<Client> {
  const cached = clients.get(cardUrl);
  if (cached && Date.now() - cached.at < cardTtlMs) return cached.client;
  const fetchImpl = checkedFetch(allowedHosts);
  const url = new URL(cardUrl);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }),
    }),
  );
  const client = factory.createFromUrl(url.origin, url.pathname + url.search);
  clients.set(cardUrl, { client, at: Date.now() });
  client.catch(() => clients.delete(cardUrl));
  return client;
}

const textOf = (parts: Part[]) =>
  parts.map((part) => (part.content?.$case === 'text' ? part.content.value : '')).join('');

const stateNames: Partial<Record<TaskState, string>> = {
  [TaskState.TASK_STATE_COMPLETED]: 'completed',
  [TaskState.TASK_STATE_FAILED]: 'failed',
  [TaskState.TASK_STATE_CANCELED]: 'canceled',
  [TaskState.TASK_STATE_INPUT_REQUIRED]: 'input-required',
  [TaskState.TASK_STATE_REJECTED]: 'rejected',
  [TaskState.TASK_STATE_AUTH_REQUIRED]: 'auth-required',
};

export const delegateAgentTool = defineTool({
  name: 'delegate_to_agent',
  description:
    'Delegate a task to an external agent over the A2A protocol and get its answer. Name one of the configured ' +
    'remote agents (`agent`), or give its agent card URL (`agent_card_url`).',
  input: z
    .object({
      agent: z.string().min(1).max(64).optional(),
      agent_card_url: z
        .url({ protocol: /^https?$/ })
        .max(2_000)
        .optional(),
      message: z.string().trim().min(1).max(16_000),
    })
    .strict()
    .refine((input) => (input.agent === undefined) !== (input.agent_card_url === undefined), {
      message: 'give exactly one of agent or agent_card_url',
    }),
  timeoutMs: 120_000,
  retry: { maximumAttempts: 2, initialIntervalMs: 2_000 },
  maxOutputChars: 8_000,
  agentsOnly: true,
  configured: () => true,
  async run(input, context) {
    const remotes = context.settings.a2aRemoteAgents ?? {};
    const cardUrl = input.agent !== undefined ? remotes[input.agent] : input.agent_card_url!;
    if (!cardUrl) {
      const known = Object.keys(remotes);
      throw new ToolError(
        `No remote agent named ${input.agent}${known.length ? ` (configured: ${known.join(', ')})` : ''}`,
      );
    }
    let answer = '';
    let final = '';
    let state = 'unknown';
    // A call run again after its worker died: the remote task it had started, from its earlier progress.
    const earlierTask = [...(context.earlierProgress ?? [])].reverse().find((update) => update.detail?.remote_task);
    let remoteTask = earlierTask?.detail?.remote_task ?? '';
    const report = async (update: { text?: string; detail?: Record<string, string> }) => {
      await context.progress?.(update);
    };
    let client: Client | undefined;
    try {
      client = await clientFor(cardUrl, context.settings.fetchAllowedHosts);
      const events: AsyncGenerator<StreamResponse> = remoteTask
        ? client.resubscribeTask({ tenant: '', id: remoteTask }, { signal: context.signal })
        : client.sendMessageStream(
            {
              tenant: '',
              message: {
                messageId: randomUUID(),
                contextId: '',
                taskId: '',
                role: Role.ROLE_USER,
                parts: [
                  {
                    content: { $case: 'text', value: input.message },
                    metadata: undefined,
                    filename: '',
                    mediaType: 'text/plain',
                  },
                ],
                metadata: undefined,
                extensions: [],
                referenceTaskIds: [],
              },
              configuration: undefined,
              metadata: undefined,
            },
            { signal: context.signal },
          );
      for await (const event of events) {
        const payload = event.payload;
        if (payload?.$case === 'task') {
          if (!remoteTask) await report({ detail: { remote_task: payload.value.id, agent_card_url: cardUrl } });
          remoteTask = payload.value.id;
          if (payload.value.status) state = stateNames[payload.value.status.state] ?? state;
          const artifactText = payload.value.artifacts.map((artifact) => textOf(artifact.parts)).join('');
          if (artifactText) answer = artifactText;
        }
        if (payload?.$case === 'message') final = textOf(payload.value.parts);
        if (payload?.$case === 'artifactUpdate' && payload.value.artifact) {
          const chunk = textOf(payload.value.artifact.parts);
          answer = (payload.value.append ? answer : '') + chunk;
          if (chunk) await report({ text: chunk });
        }
        if (payload?.$case === 'statusUpdate' && payload.value.status) {
          if (!remoteTask && payload.value.taskId) {
            remoteTask = payload.value.taskId;
            await report({ detail: { remote_task: remoteTask, agent_card_url: cardUrl } });
          }
          state = stateNames[payload.value.status.state] ?? state;
          if (payload.value.status.message) final = textOf(payload.value.status.message.parts);
        }
      }
    } catch (error) {
      if (error instanceof FetchGuardError) throw new ToolError(error.message);
      if (context.signal.aborted) {
        // The turn was cancelled (or the call timed out): the remote agent stops too.
        if (client && remoteTask) {
          await client.cancelTask({ tenant: '', id: remoteTask, metadata: undefined }).catch(() => undefined);
        }
        throw error;
      }
      throw new ToolError(`The remote agent failed: ${(error as Error).message}`, { retryable: true });
    }
    if (state === 'failed' || state === 'rejected') {
      throw new ToolError(`The remote agent's task ${state}: ${final || answer || 'no reason given'}`);
    }
    return { remote_task: remoteTask, state, answer: answer || final };
  },
});
