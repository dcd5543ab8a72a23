/**
 * Route contracts: one declaration per route (method, path as the router has it, summary, tags, who may call,
 * request schemas, responses by status), written in a `contract.ts` beside the route's `routes.ts` and collected per
 * service into its OpenAPI 3.1 document (api/openapi/document.ts). The request schemas are the very zod objects the
 * route validates with (imported from its `schema.ts`), and the response schemas are the ones the route's answers
 * are checked against in the tests (api/openapi/response-check.ts), so the document is generated from what the code
 * does rather than written beside it.
 *
 * Generator: zod-openapi (v6, zod 4 native). Weighed against @asteasolutions/zod-to-openapi (v8+, zod 4): both are
 * maintained and render OpenAPI 3.1; zod-openapi takes zod's own `.meta()` and `z.toJSONSchema` (no `.openapi()`
 * prototype extension, no registry object to thread through every module), renders request schemas as their input
 * and response schemas as their output type (defaults, coercions and transforms come out right on each side), and
 * takes the route declarations as plain objects, which is the shape a contract here already has.
 */
import { z, type ZodType } from 'zod';
import { errorStatus, type ErrorType } from '../../common/errors.ts';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * Who may call a route (the security of its operation; api/auth.ts):
 * - `public`: no credential needed (a credential that is sent must still be valid, as on every path).
 * - `optional`: works without a credential and answers the caller's own data with one (guest chat, `/auth/me`).
 * - `caller`: a credential is required: a Bearer key; on the agent service also the session cookie, and `X-API-Key`
 *   on `/api/v1/*`, `/a2a*` and `/automation/*`.
 * - `operator`: the master key (MASTER_KEY) only.
 * - `admin`: the operator console's (the agent service's `/admin/api/*`): the master key, or the session cookie of an
 *   account with the admin role (api/services/admin/operators.ts); anyone else is refused with 403.
 * - `signed`: no credential; the sender signs the raw body (webhooks), as the route's description says.
 */
export type Access = 'public' | 'optional' | 'caller' | 'operator' | 'admin' | 'signed';

export interface MediaContent {
  /** The body's schema; absent for bytes that have no structure (a file, an image). */
  schema?: ZodType;
}

export interface ResponseContract {
  description: string;
  /** By media type; absent for a response without a body (a redirect, 204). */
  content?: Record<string, MediaContent>;
  headers?: z.ZodObject;
}

export interface RouteContract {
  method: Method;
  /** The path as the router declares it (Koa's `:param`); the document writes `{param}`. */
  path: string;
  summary: string;
  description?: string;
  tags: string[];
  access: Access;
  request?: {
    /** A JSON body (`application/json`): the schema the route parses its body with. */
    body?: ZodType;
    /** Other request bodies by media type (multipart uploads, raw bytes). */
    content?: Record<string, MediaContent>;
    query?: z.ZodObject;
    /** Path parameters; absent ones are documented as strings. */
    params?: z.ZodObject;
    headers?: z.ZodObject;
  };
  /** Successful and redirect answers by status. */
  responses: Record<number, ResponseContract>;
  /**
   * Error statuses this route answers besides those every route may (`commonErrorStatuses`), each with the error
   * envelope; a description says when.
   */
  errors?: Partial<Record<ErrorStatus | 529, string>>;
  /**
   * A door that speaks another vendor's API answers errors in that vendor's envelope (api/errors.ts, `errorDialect`):
   * its schema, and the statuses every route may answer that the vendor spells otherwise (Anthropic: 503 is 529).
   */
  errorEnvelope?: { schema: ZodType; statuses?: Record<number, number> };
}

export type ErrorStatus = (typeof errorStatus)[ErrorType];

/**
 * Every route may answer these: 400 (the text check of path, query and body, a malformed body: api/text-policy.ts,
 * api/errors.ts), 401 (a credential that is sent must be valid on every path), 429 (the per-IP and per-key limits)
 * and 500, and 503 while a dependency of the platform (its database, Temporal) is down (api/readiness.ts).
 */
export const commonErrorStatuses: Record<number, string> = {
  400: 'Invalid request: the first invalid field in `param`, or text the platform refuses (NUL, lone surrogates)',
  401: 'A credential was sent and is not valid, or the route needs one and none was sent',
  429: 'Rate limited: `retry_after` seconds (also in the Retry-After header)',
  500: 'Internal error',
  503: 'A dependency of the platform (its database, Temporal) is down: `retry_after` seconds (also in Retry-After)',
};

const errorTypes = Object.keys(errorStatus) as [ErrorType, ...ErrorType[]];

/** The one error envelope of both services (api/errors.ts, common/errors.ts). */
export const errorEnvelope = z
  .strictObject({
    error: z.strictObject({
      type: z.enum(errorTypes).meta({ description: 'The error type; each maps to one HTTP status' }),
      message: z.string(),
      param: z.string().optional().meta({ description: 'The request field at fault, e.g. `messages.0.content`' }),
      retry_after: z.number().optional().meta({ description: 'Seconds to wait before trying again (429, 503)' }),
      required_plan: z.string().optional().meta({ description: 'The cheapest plan that unlocks the model' }),
      request_id: z
        .string()
        .optional()
        .meta({ description: 'A request that may still complete although it was answered 503: look it up by this id' }),
      provider: z.string().optional().meta({ description: 'The provider that failed (502)' }),
    }),
  })
  .meta({ id: 'Error', description: 'The error envelope of every failed request' });

/** A JSON response. */
export function json(schema: ZodType, description: string): ResponseContract {
  return { description, content: { 'application/json': { schema } } };
}

/** OpenAI's list page (`/v1/files`, a Response's input items): `data`, its first and last ids, and `has_more`. */
export function listPage(item: ZodType, id: string) {
  return z
    .strictObject({
      object: z.literal('list'),
      data: z.array(item),
      first_id: z.string().nullable(),
      last_id: z.string().nullable(),
      has_more: z.boolean(),
    })
    .meta({ id });
}

/** A page in that shape (`listPage`), of items that have ids. */
export function presentPage<Item extends { id: string }>(data: Item[], hasMore: boolean) {
  return {
    object: 'list' as const,
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: hasMore,
  };
}

/** A server-sent event stream; `event` is the schema of each event's `data:` JSON. */
export function eventStream(event: ZodType, description: string): ResponseContract {
  return { description, content: { 'text/event-stream': { schema: event } } };
}

/** Bytes of the given media types (a file download, audio, an image). */
export function bytes(mediaTypes: string[], description: string, headers?: z.ZodObject): ResponseContract {
  return {
    description,
    content: Object.fromEntries(mediaTypes.map((type) => [type, {}])),
    ...(headers ? { headers } : {}),
  };
}

/** A redirect (302 or 303): where to in `Location`. */
export function redirect(description: string): ResponseContract {
  return { description, headers: z.object({ location: z.string().meta({ description: 'Where to go next' }) }) };
}

/** Identity helper: a route's contract, typed. */
export function route(contract: RouteContract): RouteContract {
  return contract;
}

/**
 * A date-time as JSON carries it (an ISO 8601 string). Documented by its format alone: the long pattern zod would
 * write for it says nothing more to a reader or a client generator.
 */
export const isoDate = z.iso.datetime({ offset: true }).meta({
  override: ({ jsonSchema }) => {
    delete jsonSchema.pattern;
  },
});

/**
 * A stream of named server-sent events, documented as the frames a client reads: each event's `event:` name, its
 * `id:` (the stream position, for Last-Event-ID) and its `data:` JSON, whose schema depends on the name.
 */
export function namedEvents(id: string, events: Record<string, ZodType>): ZodType {
  const frames = Object.entries(events).map(([name, data]) =>
    z.object({ event: z.literal(name), id: z.string().optional(), data }),
  );
  return z
    .discriminatedUnion('event', frames as unknown as [z.ZodObject, ...z.ZodObject[]])
    .meta({ id, description: 'A server-sent event: its `event:` name, `id:` and `data:` JSON' });
}
