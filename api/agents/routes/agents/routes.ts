/**
 * Agents (spec 4.2, and 4.11's `GET /api/v1/agents`). `GET /agents` and `GET /agents/{id}` answer anonymous callers
 * too, with the built-in agents as the catalogue maps them (the spec gives the listing no label; a client shows the
 * agents before anyone logs in, and nothing in the catalogue is private); a logged-in caller also gets their custom
 * agents, and every model as their plan lets them use it. Everything that changes something needs a login.
 * Another user's custom agent is answered as one that does not exist (404).
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import type { z } from 'zod';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import { agentDetail, agentSummary, type AgentDirectory } from '../../../services/agents/service.ts';
import { createAgentSchema, patchAgentSchema, setModelSchema } from './schema.ts';

function notFound(agentId: string): ApiError {
  return new ApiError('not_found', `No agent '${agentId}'; see GET /agents`);
}

function body<Schema extends z.ZodType>(context: Context, schema: Schema): z.infer<Schema> {
  const parsed = schema.safeParse(context.request.body ?? {});
  if (!parsed.success) throw invalidRequest(parsed.error);
  return parsed.data;
}

export function agentRoutes(directory: AgentDirectory) {
  const router = new Router<CallerState>();

  const listing = async (context: Context & { state: CallerState }) => {
    const agents = await directory.list(context.state.principal ?? null);
    context.body = { agents: agents.map(agentSummary) };
  };
  router.get('/agents', listing);
  router.get('/api/v1/agents', async (context) => {
    requireCaller(context.state);
    await listing(context);
  });

  router.get('/agents/custom', async (context) => {
    const principal = requireCaller(context.state);
    context.body = { agents: (await directory.listCustom(principal)).map(agentSummary) };
  });

  router.post('/agents/custom', async (context) => {
    const principal = requireCaller(context.state);
    const input = body(context, createAgentSchema);
    const agent = await directory.create(principal, input);
    context.status = 201;
    context.set('Location', `/agents/${agent.id}`);
    context.body = agentDetail(agent);
  });

  router.delete('/agents/custom/:id', async (context) => {
    const principal = requireCaller(context.state);
    const agentId = context.params.id!;
    if (directory.isBuiltIn(agentId)) {
      throw new ApiError('invalid_request', `'${agentId}' is a built-in agent: it cannot be deleted`);
    }
    if (!(await directory.delete(principal, agentId))) throw notFound(agentId);
    context.body = { id: agentId, deleted: true };
  });

  router.get('/agents/:id', async (context) => {
    const agent = await directory.get(context.state.principal ?? null, context.params.id!);
    if (!agent) throw notFound(context.params.id!);
    context.body = agentDetail(agent);
  });

  // A built-in agent is forked with the changes (201, the new agent); the caller's custom agent is edited (200).
  router.patch('/agents/:id', async (context) => {
    const principal = requireCaller(context.state);
    const patch = body(context, patchAgentSchema);
    if (Object.keys(patch).length === 0) throw new ApiError('invalid_request', 'Nothing to change: send a field');
    const result = await directory.update(principal, context.params.id!, patch);
    if (!result) throw notFound(context.params.id!);
    if (result.forked) {
      context.status = 201;
      context.set('Location', `/agents/${result.agent.id}`);
    }
    context.body = agentDetail(result.agent);
  });

  router.post('/agents/:id/fork', async (context) => {
    const principal = requireCaller(context.state);
    const changes = body(context, patchAgentSchema);
    const agent = await directory.fork(principal, context.params.id!, changes);
    if (!agent) throw notFound(context.params.id!);
    context.status = 201;
    context.set('Location', `/agents/${agent.id}`);
    context.body = agentDetail(agent);
  });

  router.post('/agents/:id/model', async (context) => {
    const principal = requireCaller(context.state);
    const { model } = body(context, setModelSchema);
    const agent = await directory.setModel(principal, context.params.id!, model);
    if (!agent) throw notFound(context.params.id!);
    context.body = agentDetail(agent);
  });

  return router;
}
