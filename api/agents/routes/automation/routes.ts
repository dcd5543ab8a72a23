/**
 * The automation service integration (docs/webhooks.md, automation tools): the shape Zapier's, Make's and
 * n8n's webhook actions send, authenticated by an API key in `X-API-Key` (or `Authorization: Bearer`).
 *
 * - `POST /automation/trigger {agent_id, message, session_id?, callback_url?}` starts a run of the caller's agent
 *   (a webhook run, `webhook-<agent>-<user>.<id>`; `Idempotency-Key` names it, so a tool's retry gets the first run)
 *   and waits for it up to AUTOMATION_SYNC_WAIT (default 25 s, under the 30 s after which automation tools give up
 *   on a webhook step): finished by then, 200 with the run and its `answer`; else 202 with the run (`status_url` to
 *   poll), and with `callback_url` the run is POSTed there when it ends, signed by Standard Webhooks with the
 *   account's callback secret (`GET /api/v1/media/callback-secret` on the gateway), once.
 *   `session_id` continues a session of the caller's (the web chat's, say); without it each run has its own.
 * - `GET /automation/agents`: the agents the key can trigger, for an automation tool's dropdown.
 */
import Router from '@koa/router';
import { randomUUID } from 'node:crypto';
import { deliveryIdPattern, webhookRunId } from '../../../../common/webhooks.ts';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import type { RateLimits } from '../../../rate-limit.ts';
import type { AgentDirectory } from '../../../services/agents/service.ts';
import { webhookSessionKey, type WebhookRuns } from '../../../services/webhooks/runs.ts';
import { triggerSchema } from './schema.ts';

export function automationRoutes(dependencies: {
  agents: AgentDirectory;
  runs: WebhookRuns;
  limits: RateLimits | undefined;
  syncWaitMs: number;
}) {
  const { agents, runs, limits } = dependencies;
  const router = new Router<CallerState>();

  router.get('/automation/agents', async (context) => {
    const principal = requireCaller(context.state);
    context.body = {
      agents: (await agents.list(principal)).map((agent) => ({
        id: agent.id,
        name: agent.name,
        description: agent.description,
        builtin: agent.builtin,
      })),
    };
  });

  router.post('/automation/trigger', async (context) => {
    const principal = requireCaller(context.state);
    if (principal.operator) {
      throw new ApiError('invalid_request', 'The operator has no account to run agents for: use a user’s key');
    }
    const parsed = triggerSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const body = parsed.data;
    const idempotencyKey = context.get('idempotency-key');
    if (idempotencyKey && (idempotencyKey.length > 100 || !deliveryIdPattern.test(idempotencyKey))) {
      throw new ApiError('invalid_request', 'Idempotency-Key must be 1-100 letters, digits or . _ : -', {
        param: 'Idempotency-Key',
      });
    }
    if (!(await agents.get(principal, body.agent_id))) {
      throw new ApiError('not_found', `No agent ${body.agent_id}`, { param: 'agent_id' });
    }
    const deliveryId = `${principal.userId}.${idempotencyKey || randomUUID()}`;
    const { row, duplicate } = await runs.accept(
      {
        id: webhookRunId(body.agent_id, deliveryId),
        userId: principal.userId,
        source: 'automation',
        webhookId: null,
        agentId: body.agent_id,
        deliveryId,
        sessionKey: body.session_id ?? webhookSessionKey(`automation:${deliveryId}`),
        message: body.message,
        options: {},
        callbackUrl: body.callback_url ?? null,
      },
      async () => {
        const subject = limits?.subjectFor(principal);
        if (limits && subject) await limits.enforce(context, subject);
      },
    );
    const ended = (status: string) => status === 'done' || status === 'failed';
    let finished = ended(row.status) || (await runs.wait(row.id, dependencies.syncWaitMs));
    // Not finished in time: the caller gets 202, and the callback when it ends, unless it ended just now.
    if (!finished && !(await runs.wantCallback(row.id)) && row.callback_url) finished = true;
    const view = await runs.viewOf((await runs.row(row.id))!);
    context.status = finished ? 200 : 202;
    context.body = {
      ...view,
      duplicate,
      status_url: `/webhook/runs/${encodeURIComponent(row.id)}`,
      ...(finished ? {} : { callback: row.callback_url ? 'pending' : 'none: poll status_url' }),
    };
  });

  return router;
}
