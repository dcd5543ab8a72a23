/** API keys (spec 4.7). With MASTER_KEY: create a key for any user (created by e-mail when needed). */
import Router from '@koa/router';
import type { AuthState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import { createKeySchema } from './schema.ts';
import type { ApiKeyService } from '../../../services/apikeys/service.ts';

export function apiKeyRoutes(keys: ApiKeyService) {
  const router = new Router<AuthState>();

  router.post('/api/v1/apikeys', async (context) => {
    const parsed = createKeySchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const { principal } = context.state;
    if (!principal.operator && (parsed.data.email || parsed.data.plan)) {
      throw new ApiError('permission_denied', 'Only the operator key may set email or plan');
    }
    const user = principal.operator
      ? await keys.ensureUser({ email: parsed.data.email, plan: parsed.data.plan })
      : await keys.ensureUser({ userId: principal.userId });
    const { key, secret } = await keys.create(user.id, parsed.data.name ?? null);
    context.status = 201;
    context.body = {
      id: key.id,
      name: key.name,
      key: secret,
      created_at: key.createdAt.toISOString(),
      user_id: user.id,
    };
  });

  router.get('/api/v1/apikeys', async (context) => {
    const list = await keys.list(context.state.principal.userId);
    context.body = {
      keys: list.map((key) => ({
        id: key.id,
        name: key.name,
        key_preview: key.preview,
        created_at: key.createdAt.toISOString(),
        last_used_at: key.lastUsedAt?.toISOString() ?? null,
      })),
    };
  });

  router.delete('/api/v1/apikeys/:id', async (context) => {
    const revoked = await keys.revoke(context.state.principal.userId, context.params.id!);
    if (!revoked) throw new ApiError('not_found', `No API key ${context.params.id}`);
    context.body = { deleted: true, id: context.params.id };
  });

  return router;
}
