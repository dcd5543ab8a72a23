/**
 * Reads the built-in agent catalogue (config/agents.yaml, or AGENT_CATALOGUE_PATH) and validates it at start-up:
 * the shape (zod, strict), unique ids, every tool a known tool name (the names its caller gives: the tool registry's,
 * activities/tools/index.ts `knownToolNames`), every model in the model catalogue. A bad file
 * stops the process with the offending path, as the model catalogue does.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { z } from 'zod';
import { builtInAgentIdPattern, workspaceNames, type AgentDefinition } from '../common/agents.ts';
import { resolveModel, type Catalogue } from '../common/catalogue.ts';

export const defaultAgentCataloguePath = fileURLToPath(new URL('./agents.yaml', import.meta.url));

/** Limits shared with the custom-agent request bodies (api/agents/routes/agents/schema.ts). */
export const agentLimits = {
  name: 80,
  description: 1000,
  systemPrompt: 20_000,
  tools: 32,
  keywords: 64,
  examples: 32,
} as const;

const agentSchema = z
  .object({
    id: z
      .string()
      .regex(builtInAgentIdPattern, 'lowercase letters, digits, - and _, starting with a letter')
      .refine((id) => id !== 'custom', '"custom" is reserved (GET /agents/custom)'),
    name: z.string().trim().min(1).max(agentLimits.name),
    description: z.string().trim().min(1).max(agentLimits.description),
    system_prompt: z.string().trim().min(1).max(agentLimits.systemPrompt),
    model: z.string().min(1),
    tools: z.array(z.string()).max(agentLimits.tools),
    routing: z
      .object({
        keywords: z
          .array(
            z
              .string()
              .min(1)
              .refine((word) => word === word.toLowerCase(), 'keywords are lowercase'),
          )
          .min(1)
          .max(agentLimits.keywords),
        examples: z.array(z.string().min(1)).max(agentLimits.examples).optional(),
      })
      .strict(),
    workspace: z.enum(workspaceNames).optional(),
    temperature: z.number().min(0).max(2).optional(),
  })
  .strict();

const fileSchema = z.object({ agents: z.array(agentSchema).min(1) }).strict();

/** Validates a parsed catalogue against the model catalogue and the tool names; throws an Error naming the field. */
export function validateAgentCatalogue(
  document: unknown,
  catalogue: Catalogue,
  toolNames: Set<string>,
  source = 'agent catalogue',
): AgentDefinition[] {
  const schema = fileSchema.superRefine((file, context) => {
    const seen = new Set<string>();
    file.agents.forEach((agent, index) => {
      if (seen.has(agent.id)) {
        context.addIssue({ code: 'custom', path: ['agents', index, 'id'], message: `duplicate agent id ${agent.id}` });
      }
      seen.add(agent.id);
      agent.tools.forEach((tool, toolIndex) => {
        if (!toolNames.has(tool)) {
          context.addIssue({
            code: 'custom',
            path: ['agents', index, 'tools', toolIndex],
            message: `unknown tool ${tool}`,
          });
        }
      });
      if (!resolveModel(catalogue, agent.model)) {
        context.addIssue({ code: 'custom', path: ['agents', index, 'model'], message: `unknown model ${agent.model}` });
      }
    });
  });
  const parsed = schema.safeParse(document);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`invalid ${source}: ${issue.path.join('.')}: ${issue.message}`);
  }
  return parsed.data.agents.map((agent) => ({
    id: agent.id,
    name: agent.name,
    description: agent.description,
    systemPrompt: agent.system_prompt,
    model: agent.model,
    tools: [...new Set(agent.tools)],
    routing: { keywords: agent.routing.keywords, examples: agent.routing.examples ?? [] },
    workspace: agent.workspace ?? null,
    temperature: agent.temperature ?? null,
  }));
}

/** Loads config/agents.yaml (or `path`, i.e. AGENT_CATALOGUE_PATH) and validates it. */
export function loadAgents(catalogue: Catalogue, toolNames: Set<string>, path?: string): AgentDefinition[] {
  const filePath = path ?? defaultAgentCataloguePath;
  return validateAgentCatalogue(
    parse(readFileSync(filePath, 'utf8')),
    catalogue,
    toolNames,
    `agent catalogue ${filePath}`,
  );
}
