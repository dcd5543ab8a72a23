/**
 * The provider simulator: one plain `node:http` server speaking the OpenAI-compatible, Anthropic and Gemini
 * wire protocols with deterministic replies, the hosted media APIs (OpenAI audio and images, ElevenLabs, Replicate
 * predictions: simulator/services/media.ts), plus a control API for faults and request counts. It is the
 * upstream for tests, benchmarks and `npm start` without provider keys.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FaultRegistry, faultRuleSchema, type Fault } from './faults.ts';
import { RateLimits, rateLimitsSchema } from './rate-limits.ts';
import { anthropicProtocol } from './protocols/anthropic.ts';
import { geminiEmbeddings, openAIEmbeddings, type EmbeddingHandler } from './protocols/embeddings.ts';
import { geminiProtocol } from './protocols/gemini.ts';
import { openAIProtocol } from './protocols/openai.ts';
import type { IncomingCall, ProtocolHandler } from './protocols/protocol.ts';
import { planReply } from './reply.ts';
import { RequestLog } from './request-log.ts';
import { simulatedServices } from './services/index.ts';
import { createMediaService, type MediaService } from './services/media.ts';
import { pause, readJsonBody, sendEvents, sendJson, sendJsonReply } from './transport.ts';

export { simulatorControl, type SimulatorControl } from './control-client.ts';
export type { Fault, FaultRule } from './faults.ts';
export type { LoggedRequest, RequestSummary } from './request-log.ts';

export interface SimulatorOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Defaults to 127.0.0.1. */
  host?: string;
  /** How long a simulated Replicate prediction runs; defaults to SIM_MEDIA_JOB_MS, else 1500. */
  mediaJobMs?: number;
}

export interface RunningSimulator {
  /** Base URL without a trailing slash; the OpenAI base URL is `${url}/v1`. */
  url: string;
  port: number;
  close(): Promise<void>;
}

const maxBodyBytes = 16 * 1024 * 1024;
const geminiPath = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;
const geminiEmbeddingPath = /^\/v1beta\/models\/([^/:]+):(embedContent|batchEmbedContents)$/;

interface SimulatorState {
  faults: FaultRegistry;
  rateLimits: RateLimits;
  requests: RequestLog;
  media: MediaService;
}

/** Starts the simulator and resolves once it listens. */
export async function startSimulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  const jobMs = options.mediaJobMs ?? (Number(process.env.SIM_MEDIA_JOB_MS ?? 1500) || 0);
  const faults = new FaultRegistry();
  const requests = new RequestLog();
  const state: SimulatorState = {
    faults,
    rateLimits: new RateLimits(),
    requests,
    media: createMediaService({ faults, requests, jobMs }),
  };
  const server = createServer((request, response) => {
    handle(request, response, state).catch(() => {
      // A handler failure after headers went out can only end the connection.
      if (response.headersSent) response.destroy();
      else sendJson(response, 500, { error: { message: 'simulator failure' } });
    });
  });
  const host = options.host ?? '127.0.0.1';
  await listen(server, options.port ?? 0, host);
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    close: () => close(server),
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((error) => (error === undefined ? resolve() : reject(error)));
    // Streams held open by a stall fault would otherwise keep close() waiting.
    server.closeAllConnections();
  });
}

async function handle(request: IncomingMessage, response: ServerResponse, state: SimulatorState): Promise<void> {
  const url = new URL(request.url ?? '/', 'http://simulator');
  if (url.pathname.startsWith('/_simulator/')) return handleControl(request, response, url.pathname, state);
  const service = simulatedServices.find((candidate) => url.pathname.startsWith(candidate.prefix));
  if (service) return service.handle(request, response, url);
  if (state.media.handles(url.pathname)) return state.media.handle(request, response, url);

  const embedding = embeddingRouteOf(request.method ?? 'GET', url.pathname);
  if (embedding !== undefined) return handleEmbedding(request, response, url, embedding, state);

  const route = routeOf(request.method ?? 'GET', url.pathname);
  if (route === undefined) {
    sendJson(response, 404, { error: { message: `No route for ${request.method} ${url.pathname}` } });
    return;
  }
  const { handler, path } = route;
  const body = await readJsonBody(request, maxBodyBytes);
  if (body === undefined) {
    sendJson(response, 400, handler.errorBody(400, 'The request body is not valid JSON.'));
    return;
  }
  const call: IncomingCall = { headers: request.headers, searchParams: url.searchParams, body, path };
  const model = handler.modelOf(call);
  const loggedPath = `${url.pathname}${url.search}`;
  state.requests.record({ protocol: handler.protocol, model, path: loggedPath, headers: flatHeaders(request), body });
  response.once('finish', () => state.requests.markAnswered());

  const authenticationError = handler.authenticationError(call);
  if (authenticationError !== undefined) {
    sendJson(response, 401, handler.errorBody(401, authenticationError));
    return;
  }
  const parsed = handler.parse(call);
  if (!parsed.ok) {
    sendJson(response, parsed.status, handler.errorBody(parsed.status, parsed.message));
    return;
  }
  // The key's request limit (rate-limits.ts): its state on every answer, a 429 once the window is spent.
  const admission = state.rateLimits.admit(handler.protocol);
  for (const [name, value] of Object.entries(admission.headers)) response.setHeader(name, value);
  if (!admission.ok) {
    response.setHeader('retry-after', String(admission.retryAfterSeconds));
    sendJson(response, 429, handler.errorBody(429, 'Rate limit reached for requests (simulated limit).'));
    return;
  }
  await reply(response, handler, parsed, state.faults.take(handler.protocol, model) ?? {});
}

async function reply(
  response: ServerResponse,
  handler: ProtocolHandler,
  parsed: Extract<ReturnType<ProtocolHandler['parse']>, { ok: true }>,
  fault: Fault,
): Promise<void> {
  const clientGone = await applyLeadingFault(response, handler.errorBody, fault);
  if (clientGone === null) return;
  const plan = planReply(parsed.input);
  const options = { includeUsage: parsed.includeUsage && fault.no_usage !== true };
  if (parsed.stream === 'sse') {
    await sendEvents(response, handler.renderEvents(plan, parsed.input, options), fault, clientGone);
  } else if (parsed.stream === 'json-array') {
    // Gemini streams a JSON array when the caller did not ask for `alt=sse`.
    const chunks = handler.renderEvents(plan, parsed.input, options).map((frame) => frame.data);
    await sendJsonReply(response, chunks, fault, clientGone);
  } else {
    await sendJsonReply(response, handler.renderBody(plan, parsed.input, options), fault, clientGone);
  }
}

function embeddingRouteOf(
  method: string,
  pathname: string,
): { handler: EmbeddingHandler; path: IncomingCall['path'] } | undefined {
  if (method !== 'POST') return undefined;
  if (pathname === '/v1/embeddings') return { handler: openAIEmbeddings, path: {} };
  const gemini = geminiEmbeddingPath.exec(pathname);
  if (gemini?.[1] === undefined) return undefined;
  return { handler: geminiEmbeddings, path: { model: decodeURIComponent(gemini[1]), method: gemini[2] } };
}

/** An embedding request: logged, authenticated, then answered with the rule's fault applied (faults.ts). */
async function handleEmbedding(
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
  route: { handler: EmbeddingHandler; path: IncomingCall['path'] },
  state: SimulatorState,
): Promise<void> {
  const { handler, path } = route;
  const body = await readJsonBody(request, maxBodyBytes);
  if (body === undefined) {
    sendJson(response, 400, handler.chat.errorBody(400, 'The request body is not valid JSON.'));
    return;
  }
  const call: IncomingCall = { headers: request.headers, searchParams: url.searchParams, body, path };
  const model = handler.modelOf(call);
  const loggedPath = `${url.pathname}${url.search}`;
  state.requests.record({ protocol: handler.protocol, model, path: loggedPath, headers: flatHeaders(request), body });
  const authenticationError = handler.chat.authenticationError(call);
  if (authenticationError !== undefined) {
    sendJson(response, 401, handler.chat.errorBody(401, authenticationError));
    return;
  }
  const answer = handler.answer(call);
  if (!answer.ok) {
    sendJson(response, answer.status, handler.chat.errorBody(answer.status, answer.message));
    return;
  }
  const fault = state.faults.take(handler.protocol, model) ?? {};
  // no_usage: the body without its usage (Gemini reports none for embeddings anyway).
  const { usage: _usage, ...withoutUsage } = answer.body as Record<string, unknown>;
  const replyBody = fault.no_usage === true ? withoutUsage : answer.body;
  const clientGone = await applyLeadingFault(response, handler.chat.errorBody, fault);
  if (clientGone === null) return;
  // Stall, cut and malformed faults act on the JSON body as a whole, as for a non-streamed completion.
  await sendJsonReply(response, replyBody, fault, clientGone);
}

/**
 * The parts of a fault that come before any reply: its latency, then its status (answered with the protocol's error
 * body). Returns the signal that aborts when the client goes away (so no fault keeps sleeping for a reader that
 * left), or null when the response is already over.
 */
async function applyLeadingFault(
  response: ServerResponse,
  errorBody: (status: number, message: string) => unknown,
  fault: Fault,
): Promise<AbortSignal | null> {
  const clientGone = new AbortController();
  response.once('close', () => clientGone.abort());
  response.on('error', () => {
    // Writes racing a client disconnect fail; the close handler already stopped the reply.
  });
  if (fault.latency_ms !== undefined && !(await pause(fault.latency_ms, clientGone.signal))) return null;
  if (fault.status !== undefined) {
    const headers: Record<string, string> =
      fault.retry_after === undefined ? {} : { 'retry-after': String(fault.retry_after) };
    sendJson(response, fault.status, errorBody(fault.status, simulatedErrorMessage(fault.status)), headers);
    return null;
  }
  return clientGone.signal;
}

function routeOf(
  method: string,
  pathname: string,
): { handler: ProtocolHandler; path: IncomingCall['path'] } | undefined {
  if (method !== 'POST') return undefined;
  if (pathname === '/v1/chat/completions') return { handler: openAIProtocol, path: {} };
  if (pathname === '/v1/messages') return { handler: anthropicProtocol, path: {} };
  const gemini = geminiPath.exec(pathname);
  if (gemini?.[1] === undefined) return undefined;
  return {
    handler: geminiProtocol,
    path: { model: decodeURIComponent(gemini[1]), stream: gemini[2] === 'streamGenerateContent' },
  };
}

/** `POST|GET|DELETE /_simulator/faults`, `PUT|DELETE /_simulator/rate-limits` and `GET|DELETE /_simulator/requests`. */
async function handleControl(
  request: IncomingMessage,
  response: ServerResponse,
  pathname: string,
  state: SimulatorState,
): Promise<void> {
  const route = `${request.method} ${pathname}`;
  if (route === 'POST /_simulator/faults') {
    const parsed = faultRuleSchema.safeParse(await readJsonBody(request, maxBodyBytes));
    if (!parsed.success) {
      sendJson(response, 400, { error: { message: `Invalid fault rule: ${parsed.error.message}` } });
      return;
    }
    sendJson(response, 201, { id: state.faults.add(parsed.data) });
  } else if (route === 'GET /_simulator/faults') {
    sendJson(response, 200, { faults: state.faults.list() });
  } else if (route === 'DELETE /_simulator/faults') {
    state.faults.clear();
    sendJson(response, 200, { cleared: true });
  } else if (route === 'PUT /_simulator/rate-limits') {
    const parsed = rateLimitsSchema.safeParse(await readJsonBody(request, maxBodyBytes));
    if (!parsed.success) {
      sendJson(response, 400, { error: { message: `Invalid rate limits: ${parsed.error.message}` } });
      return;
    }
    state.rateLimits.set(parsed.data.limits);
    sendJson(response, 200, { limits: parsed.data.limits });
  } else if (route === 'DELETE /_simulator/rate-limits') {
    state.rateLimits.clear();
    sendJson(response, 200, { cleared: true });
  } else if (route === 'GET /_simulator/requests') {
    sendJson(response, 200, { ...state.requests.summary(), rate_limited: state.rateLimits.refused });
  } else if (route === 'DELETE /_simulator/requests') {
    state.requests.reset();
    state.rateLimits.refused = 0;
    sendJson(response, 200, { reset: true });
  } else {
    sendJson(response, 404, { error: { message: `No control route ${route}` } });
  }
}

function flatHeaders(request: IncomingMessage): Record<string, string> {
  return Object.fromEntries(
    Object.entries(request.headers).map(([name, value]) => [
      name,
      Array.isArray(value) ? value.join(', ') : (value ?? ''),
    ]),
  );
}

function simulatedErrorMessage(status: number): string {
  if (status === 429) return 'Rate limit reached (simulated fault).';
  if (status >= 500) return `The server had an error while processing your request (simulated fault ${status}).`;
  return `Simulated fault with status ${status}.`;
}
