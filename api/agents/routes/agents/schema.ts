/**
 * Request bodies of the agent endpoints (spec 4.2), strict: an unknown field is a 400. Limits are the catalogue's
 * (config/load-agents.ts `agentLimits`); tools must be known tool names. Whether a model exists and the caller's plan
 * allows it is checked by the directory (404 model_not_found, 403 permission_denied).
 */
import { z } from 'zod';
import { agentLimits } from '../../../../config/load-agents.ts';
import { knownToolNames } from '../../../../activities/tools/index.ts';

const known = knownToolNames();

const toolsSchema = z
  .array(
    z.string().refine((name) => known.has(name), {
      message: `unknown tool; known tools: ${[...known].sort().join(', ')}`,
    }),
  )
  .max(agentLimits.tools);

const routingSchema = z
  .object({
    keywords: z
      .array(
        z
          .string()
          .trim()
          .min(1)
          .max(100)
          .transform((word) => word.toLowerCase()),
      )
      .max(agentLimits.keywords)
      .optional(),
    examples: z.array(z.string().trim().min(1).max(1000)).max(agentLimits.examples).optional(),
  })
  .strict();

const fields = {
  name: z.string().trim().min(1).max(agentLimits.name),
  description: z.string().trim().min(1).max(agentLimits.description),
  system_prompt: z.string().trim().min(1).max(agentLimits.systemPrompt),
  model: z.string().trim().min(1).max(200),
  tools: toolsSchema,
  routing: routingSchema,
  temperature: z.number().min(0).max(2).nullable(),
};

/** `POST /agents/custom`: name, description and system prompt required; model defaults to AGENT_DEFAULT_MODEL. */
export const createAgentSchema = z
  .object({
    ...fields,
    model: fields.model.optional(),
    tools: fields.tools.optional(),
    routing: fields.routing.optional(),
    temperature: fields.temperature.optional(),
  })
  .strict();

/** `PATCH /agents/{id}` and the optional changes of `POST /agents/{id}/fork`: any subset, at least one field. */
export const patchAgentSchema = z
  .object({
    name: fields.name.optional(),
    description: fields.description.optional(),
    system_prompt: fields.system_prompt.optional(),
    model: fields.model.optional(),
    tools: fields.tools.optional(),
    routing: fields.routing.optional(),
    temperature: fields.temperature.optional(),
  })
  .strict();

/** `POST /agents/{id}/model`. */
export const setModelSchema = z.object({ model: fields.model }).strict();
