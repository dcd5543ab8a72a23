/**
 * The tests' check that every answer is the one the OpenAPI document promises (OPENAPI_RESPONSE_CHECK, set by the
 * test platform, off in production). After a route has answered, its contract (api/openapi/contract.ts) is found by
 * method and path and the answer is held against it: the status must be documented for the route; a JSON body must
 * parse with the documented zod schema for that status (the schema the document is generated from, so this is the
 * document's own word); another body must be of a documented media type. A mismatch is logged and the answer is
 * replaced by a 500 naming the route, the status and the first difference, so whichever test made the request fails
 * there, with the reason in its output. Answers whose headers are already out (a stream that wrote early) cannot be
 * replaced: they are logged.
 *
 * Placed outside the error renderer, so the rendered error envelopes are checked too.
 */
import type { Context, Middleware } from 'koa';
import type { ZodType } from 'zod';
import type { Logger } from '../../process/logger.ts';
import { errorEnvelope, type RouteContract } from './contract.ts';
import { errorStatuses, type ServiceName } from './document.ts';

interface CompiledContract {
  contract: RouteContract;
  pattern: RegExp;
  parameters: number;
}

function compile(contract: RouteContract): CompiledContract {
  const escaped = contract.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = new RegExp(`^${escaped.replace(/:\w+/g, '[^/]+')}/?$`);
  return { contract, pattern, parameters: (contract.path.match(/:\w+/g) ?? []).length };
}

/** The contract of the route that served this method and path: the most literal one when several patterns match. */
export function contractFinder(contracts: RouteContract[]): (method: string, path: string) => RouteContract | null {
  const compiled = contracts.map(compile);
  return (method, path) => {
    const wanted = method === 'HEAD' ? 'GET' : method;
    let best: CompiledContract | null = null;
    for (const candidate of compiled) {
      if (candidate.contract.method !== wanted || !candidate.pattern.test(path)) continue;
      if (!best || candidate.parameters < best.parameters) best = candidate;
    }
    return best?.contract ?? null;
  };
}

/** Whether `actual` (e.g. `image/png`) is covered by the documented media type (`image/png`, `image/*`, `*\/*`). */
function covers(documented: string, actual: string): boolean {
  if (documented === actual || documented === '*/*') return true;
  return documented.endsWith('/*') && actual.startsWith(documented.slice(0, -1));
}

function firstIssue(schema: ZodType, body: unknown): string | null {
  const parsed = schema.safeParse(body);
  if (parsed.success) return null;
  const issue = parsed.error.issues[0]!;
  const path = issue.path.join('.');
  return `${path ? `${path}: ` : ''}${issue.message}${parsed.error.issues.length > 1 ? ` (and ${parsed.error.issues.length - 1} more)` : ''}`;
}

function isStream(body: unknown): boolean {
  return body !== null && typeof body === 'object' && typeof (body as { pipe?: unknown }).pipe === 'function';
}

/** The JSON a client reads from this body; undefined for a stream (not read here) or text that is not JSON. */
function jsonValue(body: unknown): unknown {
  try {
    if (typeof body === 'string') return JSON.parse(body);
    if (Buffer.isBuffer(body)) return JSON.parse(body.toString('utf8'));
    if (isStream(body)) return undefined;
    return JSON.parse(JSON.stringify(body));
  } catch {
    return undefined;
  }
}

/** An answer as the client gets it: its status, media type (without parameters) and body. */
export interface Answer {
  status: number;
  type: string;
  body: unknown;
}

/** The answer of a request, as Koa will send it. */
function answerOf(context: Context): Answer {
  return { status: context.status, type: context.response.type, body: context.body };
}

/** What is wrong with this answer, or null when it is the documented one. */
export function responseProblem(
  contract: RouteContract,
  service: ServiceName,
  { status, type, body }: Answer,
): string | null {
  const documented = contract.responses[status];
  const errors = errorStatuses(contract, service);
  if (!documented) {
    if (!errors.has(status)) return `status ${status} is not documented`;
    const value = type === 'application/json' ? jsonValue(body) : undefined;
    if (value === undefined) return `the ${status} is not the JSON error envelope`;
    return firstIssue(contract.errorEnvelope?.schema ?? errorEnvelope, value);
  }
  if (!documented.content) {
    // Koa writes a short text or HTML note with a redirect: not part of the contract.
    if (status >= 300 && status < 400) return null;
    return body === null || body === undefined || body === '' ? null : `a body where the document has none`;
  }
  const entry = Object.entries(documented.content).find(([documentedType]) => covers(documentedType, type));
  if (!entry) return `content type ${type || '(none)'} is not documented (${Object.keys(documented.content)})`;
  const schema = entry[1].schema;
  if (!schema || type !== 'application/json' || body === undefined) return null;
  const value = jsonValue(body);
  // A JSON stream (none today) is not read here; a body that is not JSON at all is a mismatch.
  if (value === undefined) return isStream(body) ? null : 'a body that is not JSON';
  return firstIssue(schema, value);
}

export function responseCheck(service: ServiceName, contracts: RouteContract[], logger: Logger): Middleware {
  const find = contractFinder(contracts);
  return async (context, next) => {
    await next();
    const contract = find(context.method, context.path);
    // No contract: no route answered (the 404 of an unknown path), or a published site's host.
    if (!contract) return;
    // A route that wrote its own response (`context.respond = false`: the A2A stream, by `writeHead`): only its
    // status can be read back; one the document does not list is logged.
    if (context.respond === false) {
      const status = context.res.statusCode;
      if (!contract.responses[status] && !errorStatuses(contract, service).has(status)) {
        logger.error({ path: context.path, status }, 'response status not in the OpenAPI document');
      }
      return;
    }
    const answer = answerOf(context);
    const problem = responseProblem(contract, service, answer);
    if (!problem) return;
    const where = `${contract.method} ${contract.path} answered ${answer.status}`;
    logger.error(
      { path: context.path, status: answer.status, problem },
      'response does not match the OpenAPI document',
    );
    // Headers already out: logged only.
    if (context.headerSent) return;
    context.remove('Content-Disposition');
    context.status = 500;
    context.body = {
      error: {
        type: 'internal_error',
        message: `The response does not match the OpenAPI document: ${where}: ${problem}`,
      },
    };
  };
}
