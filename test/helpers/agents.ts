/**
 * Pieces the agent-service tests share: the simulator's scripted tool-call directive, and a custom agent made
 * through the API (`POST /agents/custom`) as a user would make it.
 */
import type { TestPlatform } from './platform.ts';

/**
 * The simulator's `[[call <tool> <json arguments>]]` directive (simulator/reply.ts): a user message carrying it makes
 * the scripted model ask for that tool call.
 */
export const callDirective = (tool: string, args: unknown) => `[[call ${tool} ${JSON.stringify(args)}]]`;

export interface CustomAgentDefinition {
  name: string;
  description: string;
  system_prompt: string;
  tools?: string[];
  model?: string;
}

/** Creates a custom agent owned by `key`'s user; its id. */
export async function createCustomAgent(
  platform: TestPlatform,
  key: string,
  definition: CustomAgentDefinition,
): Promise<string> {
  const response = await platform.agents('/agents/custom', { method: 'POST', key, body: JSON.stringify(definition) });
  return ((await response.json()) as { id: string }).id;
}
