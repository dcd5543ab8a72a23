/**
 * `GET /api/v1/account/{id}`, `GET /api/v1/auth/me`, `GET /api/v1/usage` (spec 4.6). A user sees only their
 * own account (403 otherwise); the operator key may read any, and `X-User-Id` selects the user for the
 * operator only (a user's `X-User-Id` naming someone else is refused the same way). `PATCH
 * /api/v1/account/{id}` is the operator's: plan changes and business accounts' custom limits.
 */
import Router from '@koa/router';
import type { AuthState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import { accountUpdateSchema, usageQuerySchema } from './schema.ts';
import type { AccountPlans } from '../../../../activities/credits/accounts.ts';
import type { AccountService } from '../../../services/account/service.ts';
import type { PrincipalCache } from '../../../principal-cache.ts';

export function accountRoutes(accounts: AccountService, plans: AccountPlans, principals?: PrincipalCache) {
  const router = new Router<AuthState>();

  const subject = (principal: AuthState['principal'], requested: string | undefined) => {
    const userId = requested || principal.userId;
    if (principal.operator) {
      if (userId === 'operator')
        throw new ApiError('invalid_request', 'The operator has no account: name a user with X-User-Id');
      return userId;
    }
    if (userId !== principal.userId) throw new ApiError('permission_denied', 'You may only read your own account');
    return userId;
  };

  router.get('/api/v1/account/:id', async (context) => {
    context.body = await accounts.account(subject(context.state.principal, context.params.id));
  });

  router.patch('/api/v1/account/:id', async (context) => {
    if (!context.state.principal.operator)
      throw new ApiError('permission_denied', 'Only the operator key may change accounts');
    const parsed = accountUpdateSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    context.body = await accounts.update(context.params.id!, parsed.data, plans);
    // Every replica hears of the change from the database; this one drops the cached keys before answering.
    principals?.forget(context.params.id!);
  });

  router.get('/api/v1/auth/me', async (context) => {
    context.body = await accounts.me(subject(context.state.principal, context.get('x-user-id') || undefined));
  });

  router.get('/api/v1/usage', async (context) => {
    const parsed = usageQuerySchema.safeParse(context.query);
    if (!parsed.success) throw invalidRequest(parsed.error);
    const userId = subject(context.state.principal, context.get('x-user-id') || undefined);
    context.body = await accounts.usage(userId, {
      from: parsed.data.from,
      to: parsed.data.to,
      groupByModel: parsed.data.group_by === 'model',
    });
  });

  return router;
}
