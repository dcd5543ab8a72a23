/**
 * Site publishing (spec 4.6): `POST /deploy/site` publishes a new site (`{url, ok}` and the site's summary, 201),
 * `GET /deploy/sites` lists the caller's, `PUT /deploy/site/{subdomain}` replaces a site's html and/or title,
 * `DELETE /deploy/site/{subdomain}` removes it. Every endpoint needs a login. Who may do what, and the errors:
 * api/services/sites/service.ts. The sites themselves are served by ./site-host.ts.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { invalidRequest } from '../../../errors.ts';
import type { SiteService } from '../../../services/sites/service.ts';
import { publishSiteSchema, subdomainSchema, updateSiteSchema } from './schema.ts';

export function siteRoutes(sites: SiteService) {
  const router = new Router<CallerState>();

  router.post('/deploy/site', async (context) => {
    const principal = requireCaller(context.state);
    const parsed = publishSiteSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const site = await sites.publish(principal.userId, parsed.data, localPort(context));
    context.status = 201;
    context.body = { url: site.url, ok: true, site };
  });

  router.get('/deploy/sites', async (context) => {
    const principal = requireCaller(context.state);
    context.body = { sites: await sites.list(principal.userId, localPort(context)) };
  });

  router.put('/deploy/site/:subdomain', async (context) => {
    const principal = requireCaller(context.state);
    const subdomain = subdomainSchema.safeParse(context.params.subdomain);
    if (!subdomain.success) throw invalidRequest(subdomain.error);
    const parsed = updateSiteSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const site = await sites.update(principal.userId, subdomain.data, parsed.data, localPort(context));
    context.body = { url: site.url, ok: true, site };
  });

  router.delete('/deploy/site/:subdomain', async (context) => {
    const principal = requireCaller(context.state);
    const subdomain = subdomainSchema.safeParse(context.params.subdomain);
    if (!subdomain.success) throw invalidRequest(subdomain.error);
    await sites.remove(principal.userId, subdomain.data);
    context.body = { subdomain: subdomain.data, ok: true, deleted: true };
  });

  return router;
}

/** The port this request reached: site URLs use it when AGENT_PORT is 0 (an ephemeral port). */
function localPort(context: Context): number | undefined {
  return context.req.socket.localPort;
}
