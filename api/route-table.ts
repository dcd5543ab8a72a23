/**
 * The routes an app serves, read from its @koa/router routers (each `router.routes()` middleware carries its router,
 * whose stack holds every route with the nested routers' routes already merged in). For tests that must cover every
 * route without a hand-kept list: the hostile-input sweep (test/api/hostile-input.test.ts).
 */
import type Router from '@koa/router';
import type Koa from 'koa';

export interface RouteEntry {
  method: string;
  /** The route's pattern, e.g. `/api/v1/sessions/:id`. */
  path: string;
  /** The names of its path parameters, in order. */
  params: string[];
}

export function routeTable(app: Koa): RouteEntry[] {
  const seen = new Set<string>();
  const routes: RouteEntry[] = [];
  for (const middleware of app.middleware) {
    const router = (middleware as { router?: Router }).router;
    if (!router) continue;
    for (const layer of router.stack) {
      const path = String(layer.path);
      for (const method of layer.methods) {
        // HEAD is served by every GET route: the GET covers it.
        if (method === 'HEAD') continue;
        const key = `${method} ${path}`;
        if (seen.has(key)) continue;
        seen.add(key);
        routes.push({ method, path, params: layer.paramNames.map((param) => String(param.name)) });
      }
    }
  }
  return routes;
}
