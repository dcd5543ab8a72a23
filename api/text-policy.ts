/**
 * The edge's text check (common/text.ts says what text is acceptable, and why), for both services and every route:
 * `urlText` checks the path's segments and the query's names and values of every request, before anything else
 * reads them, decoded from the raw URL (percent-encoded bytes that are not UTF-8 are refused there, where Koa's
 * query parser would turn them into U+FFFD); `bodyText` checks every string and field name of a parsed JSON body,
 * right after the body parser. Either answers 400 `invalid_request` naming the field, and nothing runs. Routes that
 * read their raw body (the signed webhooks) come before `bodyText`: the messaging apps' text is checked by their
 * inbox, which answers the chat rather than the platform (api/gateway/routes/webhooks/inbound.ts).
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
    // The raw query string, not `context.query`: its parser turns percent-encoded bytes that are not UTF-8 into
    // U+FFFD, so a refused value would be served as something the caller never sent.
    if (context.querystring) refuseUnacceptableQuery(context.querystring);
    await next();
  };
}

/**
 * Checks every name and value of a raw query string, decoded as `application/x-www-form-urlencoded` is (`+` is a
 * space; a `%` not followed by two hex digits is itself) but strictly: percent-encoded bytes that do not form
 * UTF-8 (`%FF`, the overlong `%C0%80`, the encoded surrogate `%ED%A0%80`) are refused rather than replaced.
 */
function refuseUnacceptableQuery(querystring: string): void {
  for (const pair of querystring.split('&')) {
    if (!pair) continue;
    const equals = pair.indexOf('=');
    const name = formDecode(equals === -1 ? pair : pair.slice(0, equals));
    if (name === null) {
      throw new ApiError('invalid_request', 'query: a parameter name is not valid percent-encoded UTF-8', {
        param: 'query',
      });
    }
    const nameProblem = textProblem(name);
    if (nameProblem) {
      throw new ApiError('invalid_request', `query: a parameter name ${nameProblem}`, { param: 'query' });
    }
    const value = formDecode(equals === -1 ? '' : pair.slice(equals + 1));
    if (value === null) {
      throw new ApiError('invalid_request', `${name}: is not valid percent-encoded UTF-8`, { param: name });
    }
    const problem = textProblem(value);
    if (problem) throw new ApiError('invalid_request', `${name}: ${problem}`, { param: name });
  }
}

/**
 * One form-encoded name or value decoded as URLSearchParams does (`+` is a space, a `%` without two hex digits is
 * itself), or null where its bytes are not UTF-8: `decodeURIComponent` refuses those (URIError) instead of replacing
 * them.
 */
function formDecode(raw: string): string | null {
  const spaced = raw.replaceAll('+', ' ');
  if (!spaced.includes('%')) return spaced;
  try {
    return decodeURIComponent(spaced.replace(/%(?![0-9A-Fa-f]{2})/g, '%25'));
  } catch {
    return null;
  }
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
