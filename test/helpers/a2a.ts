/**
 * The A2A tests' side of the wire: the official `@a2a-js/sdk` client authenticated with an API key, a user message
 * addressed to one of our agents, and the operations agent both A2A test files talk to.
 */
import { expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Role, type Message, type Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import type { CustomAgentDefinition } from './agents.ts';

/** A custom agent with a calculator and a tool that waits for approval (send_email). */
export const opsAgentDefinition: CustomAgentDefinition = {
  name: 'Ops',
  description: 'Operations helper that calculates and sends e-mail',
  system_prompt: 'You are an operations assistant.',
  tools: ['calculator', 'send_email'],
};

/** The SDK's JSON-RPC client for the agent service at `agentsUrl` (its card read from there), sending `apiKey`. */
export function a2aClient(agentsUrl: string, apiKey: string): Promise<Client> {
  const authed: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('Authorization', `Bearer ${apiKey}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl: authed })],
    }),
  );
  return factory.createFromUrl(agentsUrl);
}

/** A user's text message for the agent `agentId` (`metadata.agent_id`); `extra` replaces fields (a task to resume). */
export function a2aUserMessage(agentId: string, text: string, extra: Partial<Message> = {}): Message {
  return {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata: { agent_id: agentId },
    extensions: [],
    referenceTaskIds: [],
    ...extra,
  };
}

/** A send's result, checked to be a task (not a bare message). */
export const asTask = (result: unknown): Task => {
  expect(result).toHaveProperty('status');
  return result as Task;
};
