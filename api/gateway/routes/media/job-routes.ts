/**
 * Media job endpoints beyond the gateway spec (docs/media.md, "Media jobs: callbacks, cancel, list"), all keyed:
 *
 * - `DELETE /api/v1/media/video/{id}` and `/api/v1/media/music/{id}`: cancels the caller's queued or processing job
 *   (the provider's job cancelled, the hold refunded, the callback sent as `media.job.cancelled`) and answers the job
 *   as GET shows it, `cancelled`; 409 `conflict` for a job that has ended, 404 for a missing or another user's job.
 * - `GET /api/v1/media/jobs`: the caller's jobs of every kind, newest first, `{object: "list", data, has_more,
 *   next_cursor}`; `?limit=` (1-100, default 20), `?after=` or `?cursor=` (a previous page's `next_cursor`),
 *   `?kind=` and `?status=`. A bad parameter is a 400 naming it.
 * - `GET /api/v1/media/callback-secret`: the caller's callback signing secret (created on first use), and `POST
 *   /api/v1/media/callback-secret/rotate` replacing it (the previous one signs alongside for 24 hours).
 */
import Router from '@koa/router';
import { rotationGraceMs, type CallbackSecret, type CallbackSecrets } from '../../../../activities/media/callbacks.ts';
import { asyncJobView, jobListItem } from '../../../../activities/media/job-view.ts';
import type { AsyncMediaKind } from '../../../../common/media.ts';
import type { AuthState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import { jobListSchema } from './schema.ts';
import type { AsyncMediaJobs } from './service.ts';

export function mediaJobRoutes(jobs: AsyncMediaJobs, secrets: CallbackSecrets): Router<AuthState> {
  const router = new Router<AuthState>();

  for (const kind of ['video', 'music'] as const satisfies AsyncMediaKind[]) {
    router.delete(`/api/v1/media/${kind}/:id`, async (context) => {
      const job = await jobs.cancel(context.state.principal, kind, context.params.id!);
      context.body = asyncJobView(job);
    });
  }

  router.get('/api/v1/media/jobs', async (context) => {
    const parsed = jobListSchema.safeParse(context.query);
    if (!parsed.success) throw invalidRequest(parsed.error);
    const { limit, after, cursor, kind, status } = parsed.data;
    if (after !== undefined && cursor !== undefined && after !== cursor) {
      throw new ApiError('invalid_request', 'after: give after or cursor, not both', { param: 'after' });
    }
    const page = await jobs.list(context.state.principal, { limit, cursor: after ?? cursor, kind, status });
    context.body = {
      object: 'list',
      data: page.rows.map(jobListItem),
      has_more: page.nextCursor !== null,
      next_cursor: page.nextCursor,
    };
  });

  router.get('/api/v1/media/callback-secret', async (context) => {
    context.set('Cache-Control', 'no-store');
    context.body = secretView(await secrets.current(context.state.principal.userId));
  });

  router.post('/api/v1/media/callback-secret/rotate', async (context) => {
    context.set('Cache-Control', 'no-store');
    context.body = secretView(await secrets.rotate(context.state.principal.userId));
  });

  return router;
}

function secretView(secret: CallbackSecret) {
  return {
    secret: secret.secret,
    scheme: 'standard-webhooks',
    created_at: secret.createdAt.toISOString(),
    ...(secret.rotatedAt ? { rotated_at: secret.rotatedAt.toISOString() } : {}),
    ...(secret.previousSecret ? { previous_secret_valid_until: graceEnd(secret.rotatedAt!) } : {}),
  };
}

const graceEnd = (rotatedAt: Date) => new Date(rotatedAt.getTime() + rotationGraceMs).toISOString();
