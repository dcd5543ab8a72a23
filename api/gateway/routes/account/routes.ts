/**
 * `GET /api/v1/account/{id}`, `GET /api/v1/auth/me`, `GET /api/v1/usage` (spec 4.6). A user sees only their
 * own account (403 otherwise); the operator key may read any, and `X-User-Id` selects the user for the
 * operator only (a user's `X-User-Id` naming someone else is refused the same way). `PATCH
 * /api/v1/account/{id}` is the operator's: plan changes and business accounts' custom limits, with an optional
 * `reason`, recorded in the operator console's audit log as the master key's (AccountService.update).
 */
import Router from '@koa/router';
import type { AuthState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import { accountUpdateSchema, usageQuerySchema } from './schema.ts';
import { requestIdOf } from '../../../observability.ts';
import { masterKeyActor } from '../../../services/admin/audit.ts';
import type { AccountService } from '../../../services/account/service.ts';

export function accountRoutes(accounts: AccountService) {
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
    const { reason, ...update } = parsed.data;
    context.body = await accounts.update(context.params.id!, update, {
      actor: masterKeyActor,
      reason: reason ?? null,
      requestId: requestIdOf(context),
    });
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
