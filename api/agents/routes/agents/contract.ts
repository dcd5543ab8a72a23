/** Contracts of the agent catalogue and custom agents (api/openapi/contract.ts). */
import { z } from 'zod';
import { workspaceNames } from '../../../../common/agents.ts';
import { json, route } from '../../../openapi/contract.ts';
import { createAgentSchema, patchAgentSchema, setModelSchema } from './schema.ts';

const tags = ['Agents'];

export const agentSummarySchema = z
  .strictObject({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    model: z.string().meta({ description: 'The model it answers the caller with (as the caller’s plan allows)' }),
    configured_model: z.string(),
    tools: z.array(z.string()),
    builtin: z.boolean(),
    workspace: z.enum(workspaceNames).nullable(),
    forked_from: z.string().nullable(),
  })
  .meta({ id: 'AgentSummary' });

export const agentDetailSchema = agentSummarySchema
  .extend({
    system_prompt: z.string(),
    routing: z.strictObject({ keywords: z.array(z.string()), examples: z.array(z.string()) }),
    temperature: z.number().nullable(),
  })
  .meta({ id: 'Agent' });

const list = json(z.strictObject({ agents: z.array(agentSummarySchema) }), 'The agents');
const created = { ...json(agentDetailSchema, 'The new agent'), headers: z.object({ location: z.string() }) };
const modelErrors = {
  403: 'The model is outside the caller’s plan',
  404: 'No such agent of the caller’s, or no such model',
} as const;

export const agentCatalogueContracts = [
  route({
    method: 'GET',
    path: '/agents',
    summary: 'The agents: built-in ones, and the caller’s own',
    tags,
    access: 'optional',
    responses: { 200: list },
  }),
  route({
    method: 'GET',
    path: '/api/v1/agents',
    summary: 'The agents (external API)',
    tags,
    access: 'caller',
    responses: { 200: list },
  }),
  route({
    method: 'GET',
    path: '/agents/custom',
    summary: 'The caller’s custom agents',
    tags,
    access: 'caller',
    responses: { 200: list },
  }),
  route({
    method: 'POST',
    path: '/agents/custom',
    summary: 'Create a custom agent',
    tags,
    access: 'caller',
    request: { body: createAgentSchema },
    responses: { 201: created },
    errors: modelErrors,
  }),
  route({
    method: 'DELETE',
    path: '/agents/custom/:id',
    summary: 'Delete a custom agent',
    tags,
    access: 'caller',
    responses: { 200: json(z.strictObject({ id: z.string(), deleted: z.literal(true) }), 'Deleted') },
    errors: { 404: 'No such agent of the caller’s' },
  }),
  route({
    method: 'GET',
    path: '/agents/:id',
    summary: 'One agent with its prompt and settings',
    tags,
    access: 'optional',
    responses: { 200: json(agentDetailSchema, 'The agent') },
    errors: { 404: 'No such agent' },
  }),
  route({
    method: 'PATCH',
    path: '/agents/:id',
    summary: 'Change an agent',
    description: 'The caller’s custom agent is changed (200); a built-in agent is forked with the changes (201).',
    tags,
    access: 'caller',
    request: { body: patchAgentSchema },
    responses: { 200: json(agentDetailSchema, 'The agent as changed'), 201: created },
    errors: modelErrors,
  }),
  route({
    method: 'POST',
    path: '/agents/:id/fork',
    summary: 'Fork an agent into a custom one',
    tags,
    access: 'caller',
    request: { body: patchAgentSchema },
    responses: { 201: created },
    errors: modelErrors,
  }),
  route({
    method: 'POST',
    path: '/agents/:id/model',
    summary: 'Choose an agent’s model',
    tags,
    access: 'caller',
    request: { body: setModelSchema },
    responses: { 200: json(agentDetailSchema, 'The agent') },
    errors: modelErrors,
  }),
];
