/**
 * The edge's text check (common/text.ts says what text is acceptable, and why), for both services and every route:
 * `urlText` checks the path's segments and the query's names and values of every request, before anything else
 * reads them; `bodyText` checks every string and field name of a parsed JSON body, right after the body parser.
 * Either answers 400 `invalid_request` naming the field, and nothing runs. Routes that read their raw body (the
 * signed webhooks) come before `bodyText`: the messaging apps' text is checked by their inbox, which answers the
 * chat rather than the platform (api/gateway/routes/webhooks/inbound.ts).
 */
import type { Middleware } from 'koa';
import { findTextProblem, textProblem } from '../common/text.ts';
import { ApiError } from './errors.ts';

export function urlText(): Middleware {
  return async (context, next) => {
    const segments = context.path.split('/');
    for (let index = 1; index < segments.length; index++) {
      const raw = segments[index]!;
      let decoded = raw;
      try {
        if (raw.includes('%')) decoded = decodeURIComponent(raw);
      } catch {
        throw new ApiError('invalid_request', `path: segment ${index} is not valid percent-encoded UTF-8`, {
          param: 'path',
        });
      }
      const problem = textProblem(decoded);
      if (problem) throw new ApiError('invalid_request', `path: segment ${index} ${problem}`, { param: 'path' });
    }
    if (context.querystring) {
      for (const [name, value] of Object.entries(context.query)) {
        const nameProblem = textProblem(name);
        if (nameProblem) {
          throw new ApiError('invalid_request', `query: a parameter name ${nameProblem}`, { param: 'query' });
        }
        for (const item of Array.isArray(value) ? value : [value ?? '']) {
          const problem = textProblem(item);
          if (problem) throw new ApiError('invalid_request', `${name}: ${problem}`, { param: name });
        }
      }
    }
    await next();
  };
}

export function bodyText(): Middleware {
  return async (context, next) => {
    const body: unknown = context.request.body;
    if (body !== undefined && body !== null) refuseUnacceptableText(body);
    await next();
  };
}

/** Throws the 400 for the first unacceptable string or field name in `value` (a body, or a multipart's fields). */
export function refuseUnacceptableText(value: unknown): void {
  const found = findTextProblem(value);
  if (!found) return;
  const path = found.path.join('.');
  throw new ApiError('invalid_request', `${path || 'body'}: ${found.problem}`, { ...(path ? { param: path } : {}) });
}
