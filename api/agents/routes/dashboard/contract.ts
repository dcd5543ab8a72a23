/** Contract of `GET /dashboard` (api/openapi/contract.ts). */
import { json, route } from '../../../openapi/contract.ts';
import { dashboardQuerySchema, dashboardSchema } from './schema.ts';

export const dashboardContracts = [
  route({
    method: 'GET',
    path: '/dashboard',
    summary: 'The caller’s statistics (the operator’s: the platform’s)',
    tags: ['Dashboard'],
    access: 'caller',
    request: { query: dashboardQuerySchema },
    responses: { 200: json(dashboardSchema.strict(), 'Figures per day, per agent, per tool, schedules, jobs') },
  }),
];
