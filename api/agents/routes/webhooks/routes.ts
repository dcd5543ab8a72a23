/**
 * Inbound webhooks, as their owner manages them (docs/webhooks.md; the receivers are deliveries.ts). Every
 * route needs a login or a key; another user's webhook or run is answered as one that does not exist (404).
 *
 * - `POST /webhooks {agent_id, source?: 'standard'|'github', forward_to_messengers?, repository?, github_token?,
 *   comment_without_approval?}` → 201 with the webhook, its `url` and its `secret` (shown this once). `standard`
 *   (the default) is `POST /webhook/{agent_id}` signed by Standard Webhooks; `github` needs `repository`
 *   (`owner/name`, one webhook per repository and owner: 409 for a second) and takes the token the agent comments
 *   with.
 * - `GET /webhooks`, `GET /webhooks/{id}`: without secrets or tokens.
 * - `POST /webhooks/{id}/rotate-secret` → the new `secret` (shown this once); the previous one is accepted for 24
 *   hours more (`previous_secret_valid_until`).
 * - `DELETE /webhooks/{id}`: deliveries to its URL are 401 from then on.
 * - `GET /webhook/runs/{id}`: a run's status (`queued`, `running`, `waiting_for_approval` with `pending_approval`,
 *   `done`, `failed`), its answer or error, its session and turn, and an automation run's callback.
 *
 * Without TOKEN_ENCRYPTION_KEY (the key secrets are stored under) webhooks cannot be created: 503.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import type { WebhookStore, WebhookView } from '../../../../activities/webhooks/webhook-store.ts';
import { requireCaller, serviceOrigin, type CallerState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import type { Principal } from '../../../services/apikeys/service.ts';
import type { WebhookRuns } from '../../../services/webhooks/runs.ts';
import { createWebhookSchema as createSchema } from './schema.ts';

export function webhookRoutes(dependencies: {
  store: WebhookStore | null;
  runs: WebhookRuns;
  publicUrl: string | undefined;
  hasAgent(principal: Principal, agentId: string): Promise<boolean>;
}) {
  const { runs } = dependencies;
  const router = new Router<CallerState>();

  const storeOf = (): WebhookStore => {
    if (!dependencies.store) {
      throw new ApiError(
        'service_unavailable',
        'Webhooks need TOKEN_ENCRYPTION_KEY (their secrets are stored encrypted with it)',
      );
    }
    return dependencies.store;
  };
  const ownerOf = (context: Context & { state: CallerState }): Principal => {
    const principal = requireCaller(context.state);
    if (principal.operator) {
      throw new ApiError('invalid_request', 'The operator has no account to own webhooks: log in, or use a user’s key');
    }
    return principal;
  };
  const withUrl = (context: Context, view: WebhookView) => {
    const origin = (dependencies.publicUrl ?? serviceOrigin(context)).replace(/\/$/, '');
    const path = view.source === 'github' ? '/webhook/github' : `/webhook/${encodeURIComponent(view.agent_id)}`;
    return { ...view, url: `${origin}${path}?hook=${view.id}` };
  };
  const notFound = (id: string) => new ApiError('not_found', `No webhook ${id}`);

  router.post('/webhooks', async (context) => {
    const principal = ownerOf(context);
    const parsed = createSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const body = parsed.data;
    const store = storeOf();
    if (!(await dependencies.hasAgent(principal, body.agent_id))) {
      throw new ApiError('not_found', `No agent ${body.agent_id}`, { param: 'agent_id' });
    }
    const created = await store.create(principal.userId, {
      source: body.source,
      agentId: body.agent_id,
      ...(body.repository ? { repository: body.repository } : {}),
      ...(body.github_token ? { githubToken: body.github_token } : {}),
      commentWithoutApproval: body.comment_without_approval ?? false,
      forwardToMessengers: body.forward_to_messengers ?? false,
    });
    if (!created) {
      throw new ApiError('conflict', `You already have a webhook for ${body.repository}: delete it first`, {
        param: 'repository',
      });
    }
    context.status = 201;
    context.set('Location', `/webhooks/${created.view.id}`);
    context.body = { ...withUrl(context, created.view), secret: created.secret };
  });

  router.get('/webhooks', async (context) => {
    const principal = ownerOf(context);
    const store = storeOf();
    context.body = { webhooks: (await store.list(principal.userId)).map((view) => withUrl(context, view)) };
  });

  router.get('/webhooks/:id', async (context) => {
    const principal = ownerOf(context);
    const view = await storeOf().get(principal.userId, context.params.id!);
    if (!view) throw notFound(context.params.id!);
    context.body = withUrl(context, view);
  });

  router.post('/webhooks/:id/rotate-secret', async (context) => {
    const principal = ownerOf(context);
    const rotated = await storeOf().rotate(principal.userId, context.params.id!);
    if (!rotated) throw notFound(context.params.id!);
    context.body = { ...withUrl(context, rotated.view), secret: rotated.secret };
  });

  router.delete('/webhooks/:id', async (context) => {
    const principal = ownerOf(context);
    if (!(await storeOf().delete(principal.userId, context.params.id!))) throw notFound(context.params.id!);
    context.body = { id: context.params.id, deleted: true };
  });

  router.get('/webhook/runs/:id', async (context) => {
    const principal = ownerOf(context);
    const view = await runs.view(principal.userId, context.params.id!);
    if (!view) throw new ApiError('not_found', `No webhook run ${context.params.id}`);
    context.body = view;
  });

  return router;
}
