/**
 * Agents: the built-in catalogue (config/agents.yaml, read by config/load-agents.ts) and users' custom agents
 * (api/services/agents/service.ts) resolve to the same `AgentDefinition`. Plain types only: the workflow bundle
 * imports this file, so no zod here.
 */

/** The workspace suite (spec 2): agents for these need the user's Google login. */
export const workspaceNames = ['mail', 'calendar', 'drive', 'sheets', 'docs', 'contacts', 'tasks'] as const;
export type WorkspaceName = (typeof workspaceNames)[number];

export interface AgentRouting {
  /** Lowercase words and phrases the keyword fallback router matches in a message. */
  keywords: string[];
  /** Sample requests this agent should get (shown to the model router). */
  examples: string[];
}

/** One agent as a chat turn uses it. */
export interface AgentDefinition {
  id: string;
  name: string;
  /** What the router reads to pick the agent for a message. */
  description: string;
  systemPrompt: string;
  /** A model id of the model catalogue. */
  model: string;
  /** Tool names: built-in tools (activities/tools/) and the agent service's own (`save_memory`, `update_plan`, …). */
  tools: string[];
  routing: AgentRouting;
  workspace: WorkspaceName | null;
  temperature: number | null;
}

/** An agent as one caller sees it: whose it is, and the model it answers with for them. */
export interface ResolvedAgent extends AgentDefinition {
  builtin: boolean;
  /** For a custom agent forked from a built-in one: that agent's id. */
  forkedFrom: string | null;
  /** The model the definition names (or the caller chose); `model` is what the caller's plan lets it use. */
  configuredModel: string;
}

/** Agent ids: lowercase words joined by `-` or `_`; custom agents' ids are `agt_…`. */
export const builtInAgentIdPattern = /^[a-z][a-z0-9_-]{0,39}$/;
