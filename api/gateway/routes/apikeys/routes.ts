/**
 * API keys (spec 4.7). With MASTER_KEY: create a key for any user (created by e-mail when needed, on `plan`), an
 * operator action recorded in the operator console's audit log as the master key's, with `reason` when given, in the
 * key's own transaction (ApiKeyService.createForOperator). A user's key creates keys for its own user only.
 */
import Router from '@koa/router';
import type { AuthState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import { requestIdOf } from '../../../observability.ts';
import { createKeySchema } from './schema.ts';
import { masterKeyActor } from '../../../services/admin/audit.ts';
import type { ApiKeyService } from '../../../services/apikeys/service.ts';

export function apiKeyRoutes(keys: ApiKeyService) {
  const router = new Router<AuthState>();

  router.post('/api/v1/apikeys', async (context) => {
    const parsed = createKeySchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const { principal } = context.state;
    const { name, email, plan, reason } = parsed.data;
    let created;
    if (principal.operator) {
      created = await keys.createForOperator(
        { email, plan, name: name ?? null },
        { actor: masterKeyActor, reason: reason ?? null, requestId: requestIdOf(context) },
      );
    } else {
      if (email || plan || reason !== undefined) {
        throw new ApiError('permission_denied', 'Only the operator key may set email, plan or reason');
      }
      const user = await keys.ensureUser({ userId: principal.userId });
      created = { user, ...(await keys.create(user.id, name ?? null)) };
    }
    const { user, key, secret } = created;
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
