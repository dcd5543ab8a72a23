/**
 * The operator console's API (docs/web-app.md, "Operator console"; the page is `/admin` of the web app). Every
 * route is for an operator only (api/services/admin/operators.ts: the master key, or an admin's logged-in browser): 401 without a
 * credential, 403 for anyone else. Paths under `/admin/api/`, not `/api/…`: the agent service's per-IP limit counts
 * `/api` (spec 8), and the console reads several figures per page.
 *
 * - `GET /admin/api/overview?days=`: the platform's figures (turns, schedules, media jobs, webhook runs by status).
 * - `GET /admin/api/providers`: providers and media engines with their circuit breakers.
 * - `GET /admin/api/queue`: the durable capacity queue (docs/capacity-queue.md).
 * - `GET /admin/api/workflows/failed?hours=&limit=`: failed and timed-out workflows, with their failures.
 * - `GET /admin/api/users?q=&limit=&after=` (a search by address prefix or id, or everyone newest first; keyset
 *   pages), `GET /admin/api/users/{id}`, `GET /admin/api/users/{id}/ledger`.
 * - `POST /admin/api/users/{id}/credits` `{amount, reason}` with `Idempotency-Key`: 201, or 200 for a repeat.
 * - `POST /admin/api/users/{id}/keys/{key_id}/revoke` `{reason}`: revokes one of the user's keys.
 * - `PATCH /admin/api/users/{id}/account` `{plan?, custom_limits?, reason}`: the gateway's account change.
 * - `GET /admin/api/audit?user_id=&action=&limit=&before=`: the audit log of operators' actions, newest first.
 * - `GET /admin/api/turns`, `GET /admin/api/turns/{id}`, `GET /admin/api/requests`, `GET /admin/api/requests/{id}`.
 *
 * Every action (an adjustment, a revocation, an account change) writes its audit row with the action itself
 * (api/services/admin/audit.ts), with the reason and the request's `X-Request-Id`, which every console answer carries.
 * Answers are `Cache-Control: private, no-store`: they are about other people.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import type { z } from 'zod';
import type { CallerState } from '../../../auth.ts';
import { invalidRequest } from '../../../errors.ts';
import type { AdminService } from '../../../services/admin/service.ts';
import type { Operator, Operators } from '../../../services/admin/operators.ts';
import { requestIdOf } from '../../../observability.ts';
import {
  accountChangeSchema,
  adjustCreditsSchema,
  auditQuerySchema,
  failedQuerySchema,
  idempotencyHeadersSchema,
  keyParamsSchema,
  ledgerQuerySchema,
  overviewQuerySchema,
  requestParamsSchema,
  requestsQuerySchema,
  revokeKeySchema,
  turnParamsSchema,
  turnsQuerySchema,
  userParamsSchema,
  usersQuerySchema,
} from './schema.ts';

function parse<Schema extends z.ZodType>(schema: Schema, value: unknown): z.infer<Schema> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw invalidRequest(parsed.error);
  return parsed.data;
}

export function adminRoutes(dependencies: { admin: AdminService; operators: Operators }) {
  const { admin, operators } = dependencies;
  const router = new Router<CallerState & { operator?: Operator }>({ prefix: '/admin/api' });

  // Who may: checked before anything is read or parsed, so a non-operator learns nothing from a 400.
  router.use(async (context, next) => {
    context.state.operator = await operators.require(context.state);
    context.set('Cache-Control', 'private, no-store');
    // Every console request has its id (its log line carries it); an action's audit row records it.
    requestIdOf(context);
    await next();
  });

  router.get('/overview', async (context) => {
    context.body = await admin.overview(parse(overviewQuerySchema, context.query).days);
  });

  router.get('/queue', async (context) => {
    context.body = await admin.queue();
  });

  router.get('/providers', async (context) => {
    context.body = await admin.providers();
  });

  router.get('/workflows/failed', async (context) => {
    context.body = await admin.failedWorkflows(parse(failedQuerySchema, context.query));
  });

  router.get('/users', async (context) => {
    context.body = await admin.users(parse(usersQuerySchema, context.query));
  });

  router.get('/users/:user_id', async (context) => {
    context.body = await admin.user(parse(userParamsSchema, context.params).user_id);
  });

  router.get('/users/:user_id/ledger', async (context) => {
    const { user_id } = parse(userParamsSchema, context.params);
    context.body = await admin.ledger(user_id, parse(ledgerQuerySchema, context.query));
  });

  router.post('/users/:user_id/credits', async (context) => {
    const { user_id } = parse(userParamsSchema, context.params);
    const headers = parse(idempotencyHeadersSchema, { 'idempotency-key': headerOf(context, 'idempotency-key') });
    const body = parse(adjustCreditsSchema, context.request.body ?? {});
    const answer = await admin.adjustCredits(
      context.state.operator!,
      user_id,
      body,
      headers['idempotency-key'],
      requestIdOf(context),
    );
    context.status = answer.replayed ? 200 : 201;
    context.body = answer;
  });

  router.post('/users/:user_id/keys/:key_id/revoke', async (context) => {
    const { user_id, key_id } = parse(keyParamsSchema, context.params);
    const { reason } = parse(revokeKeySchema, context.request.body ?? {});
    context.body = await admin.revokeKey(context.state.operator!, user_id, key_id, reason, requestIdOf(context));
  });

  router.patch('/users/:user_id/account', async (context) => {
    const { user_id } = parse(userParamsSchema, context.params);
    const change = parse(accountChangeSchema, context.request.body ?? {});
    context.body = await admin.changeAccount(context.state.operator!, user_id, change, requestIdOf(context));
  });

  router.get('/audit', async (context) => {
    context.body = await admin.audit(parse(auditQuerySchema, context.query));
  });

  router.get('/turns', async (context) => {
    context.body = await admin.turns(parse(turnsQuerySchema, context.query));
  });

  router.get('/turns/:turn_id', async (context) => {
    context.body = await admin.turn(parse(turnParamsSchema, context.params).turn_id);
  });

  router.get('/requests', async (context) => {
    context.body = await admin.requests(parse(requestsQuerySchema, context.query));
  });

  router.get('/requests/:request_id', async (context) => {
    context.body = await admin.request(parse(requestParamsSchema, context.params).request_id);
  });

  return router;
}

/** A header's value, or undefined when it was not sent (so the schema says it is missing). */
function headerOf(context: Context, name: string): string | undefined {
  return context.get(name) || undefined;
}
