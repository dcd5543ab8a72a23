import { defineEntity, p } from '@mikro-orm/core';

/**
 * A user's own agent (spec 4.2): created from scratch, or forked from a built-in agent (`forkedFrom`). Only its
 * owner sees it; the built-in catalogue itself is never edited (config/agents.yaml).
 */
export const CustomAgent = defineEntity({
  name: 'CustomAgent',
  tableName: 'custom_agents',
  properties: {
    /** `agt_…` */
    id: p.string().primary(),
    userId: p.string().index(),
    /** The built-in agent it was forked from, if any. */
    forkedFrom: p.string().nullable(),
    name: p.string(),
    description: p.text(),
    systemPrompt: p.text(),
    model: p.string(),
    tools: p.json<string[]>(),
    routing: p.json<{ keywords: string[]; examples: string[] }>(),
    temperature: p.double().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});

/**
 * A user's model for a built-in agent (POST /agents/{builtin}/model): recorded per user without forking the agent,
 * so the agent keeps following the catalogue's prompt and tools.
 */
export const AgentModelChoice = defineEntity({
  name: 'AgentModelChoice',
  tableName: 'agent_model_choices',
  properties: {
    userId: p.string().primary(),
    agentId: p.string().primary(),
    model: p.string(),
  },
});
