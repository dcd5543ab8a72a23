/** What each simulated wire protocol provides to the server: parsing, authentication and rendering. */
import type { IncomingHttpHeaders } from 'node:http';
import type { Protocol } from '../faults.ts';
import type { ReplyPlan, SimulationInput } from '../reply.ts';
import type { EventFrame } from '../transport.ts';

/** A request as routed: headers, query, the parsed JSON body and what the path said. */
export interface IncomingCall {
  headers: IncomingHttpHeaders;
  searchParams: URLSearchParams;
  body: unknown;
  /** Gemini names the model and the method (streaming or not, an embedding method) in the path. */
  path: { model?: string; stream?: boolean; method?: string };
}

export type ParsedCall =
  | { ok: true; input: SimulationInput; stream: false | 'sse' | 'json-array'; includeUsage: boolean }
  | { ok: false; status: number; message: string };

export interface RenderOptions {
  /** Whether usage belongs in the reply (OpenAI streams report it only on request; the no_usage fault). */
  includeUsage: boolean;
}

export interface ProtocolHandler {
  readonly protocol: Protocol;
  /** The model a request names, for counting and fault matching before it is validated ('' if none). */
  modelOf(call: IncomingCall): string;
  /** An error message when the request lacks this protocol's credentials. */
  authenticationError(call: IncomingCall): string | undefined;
  parse(call: IncomingCall): ParsedCall;
  errorBody(status: number, message: string): unknown;
  renderBody(plan: ReplyPlan, input: SimulationInput, options: RenderOptions): unknown;
  renderEvents(plan: ReplyPlan, input: SimulationInput, options: RenderOptions): EventFrame[];
}

/** The header's value when present and non-empty. */
export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first.trim() === '' ? undefined : first;
}

/** A short id in the style providers use after their prefix. */
export function simulatedId(length = 24): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let id = '';
  for (let index = 0; index < length; index++) id += alphabet[Math.floor(Math.random() * alphabet.length)];
  return id;
}

/** The `model` string of a JSON body, or '' when there is none. */
export function bodyModel(body: unknown): string {
  if (typeof body !== 'object' || body === null || !('model' in body)) return '';
  return typeof body.model === 'string' ? body.model : '';
}
