/**
 * The site host: requests whose host is `<label>.<SITE_DOMAIN>` (any port) are answered here with the site published
 * on `<label>`, ahead of every other middleware of the agent service but the request log, so no cookie, session, CSRF
 * or API route of the app runs or is reachable on a site host. Both the Host header and, behind a proxy, the
 * forwarded host are checked: either one naming a site host makes it a site request.
 *
 * - `GET`/`HEAD` of `/` (or `/index.html`) serve the html exactly as published; any other path is 404 and any other
 *   method 405, both as plain text with the same headers.
 * - The origin is not the app's: the app answers on its own host (`localhost`, 127.0.0.1, AGENT_PUBLIC_URL) and its
 *   session cookie is host-only (no Domain attribute), so it is never sent to a site host.
 * - `Content-Security-Policy` with `sandbox allow-scripts allow-forms allow-popups` (no `allow-same-origin`): the page
 *   runs in an opaque origin, so its scripts run but have no cookies or storage of any origin, and every request it
 *   makes is cross-site (SameSite cookies are not attached; the app's CSRF check sees `Origin: null`).
 *   `connect-src 'none'` stops fetch/XHR/WebSocket/EventSource altogether; `default-src 'self' 'unsafe-inline' data:
 *   https:` allows inline styles and scripts and https/data resources; `frame-ancestors 'none'` (and
 *   `X-Frame-Options: DENY`) keep it out of frames. Also `X-Content-Type-Options: nosniff`,
 *   `Referrer-Policy: no-referrer`, `Cross-Origin-Opener-Policy: same-origin`.
 * - Caching: a strong `ETag` (SHA-256 of the html) with `Cache-Control: no-cache`, so an update shows at once and an
 *   unchanged page is a 304.
 */
import type { Context, Middleware } from 'koa';
import type { SiteStore, SiteUrls } from '../../../../activities/sites/site-store.ts';

export const siteContentSecurityPolicy =
  "sandbox allow-scripts allow-forms allow-popups; default-src 'self' 'unsafe-inline' data: https:; " +
  "connect-src 'none'; frame-ancestors 'none'; base-uri 'none'";

const securityHeaders: Record<string, string> = {
  'Content-Security-Policy': siteContentSecurityPolicy,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

export function siteHost(sites: SiteStore, urls: SiteUrls): Middleware {
  return async (context, next) => {
    const label = siteLabelOf(context, urls);
    if (label === null) return next();
    context.set(securityHeaders);
    if (context.method !== 'GET' && context.method !== 'HEAD') {
      context.set('Allow', 'GET, HEAD');
      return plain(context, 405, 'Method not allowed');
    }
    if (context.path !== '/' && context.path !== '/index.html') return plain(context, 404, 'Not found');
    const site = await sites.serve(label);
    if (!site) return plain(context, 404, 'No site is published here');
    context.set('Cache-Control', 'no-cache');
    context.set('ETag', `"${site.etag}"`);
    context.set('Last-Modified', site.updatedAt.toUTCString());
    context.type = 'text/html; charset=utf-8';
    context.body = site.html;
    // Koa's `fresh` compares If-None-Match with the ETag just set (and If-Modified-Since).
    if (context.fresh) {
      context.status = 304;
      context.body = null;
    }
  };
}

/** The site label the request is for, or null when it is for the app. */
function siteLabelOf(context: Context, urls: SiteUrls): string | null {
  const direct = urls.siteLabel(context.get('host'));
  if (direct !== null) return direct;
  // Read whether or not the sender is a trusted proxy (api/forwarding.ts): naming a site host only ever narrows what
  // the request reaches (a published page or a 404), so believing it grants nothing, while ignoring it would open
  // the app on a site's origin behind a proxy the operator did not list.
  const forwarded = context.get('x-forwarded-host').split(',')[0]!.trim();
  return forwarded ? urls.siteLabel(forwarded) : null;
}

function plain(context: Context, status: number, message: string): void {
  context.status = status;
  context.type = 'text/plain; charset=utf-8';
  context.body = `${message}\n`;
}
