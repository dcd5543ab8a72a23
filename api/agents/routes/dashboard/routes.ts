/**
 * `GET /dashboard?days=` (spec 4.13): the caller's statistics as JSON (api/services/dashboard/service.ts computes them
 * and says how); the operator (the master key) gets the platform's. Cookie or key, like the rest of the service.
 */
import Router from '@koa/router';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { invalidRequest } from '../../../errors.ts';
import type { DashboardService } from '../../../services/dashboard/service.ts';
import { dashboardQuerySchema } from './schema.ts';

export function dashboardRoutes(dashboard: DashboardService) {
  const router = new Router<CallerState>();
  router.get('/dashboard', async (context) => {
    const principal = requireCaller(context.state);
    const query = dashboardQuerySchema.safeParse(context.query);
    if (!query.success) throw invalidRequest(query.error);
    context.set('Cache-Control', 'private, no-store');
    context.body = await dashboard.dashboard(principal, query.data.days);
  });
  return router;
}
