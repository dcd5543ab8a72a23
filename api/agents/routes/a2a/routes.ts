/**
 * Agent-to-agent endpoints (spec 4.7; docs/teams-and-a2a.md):
 *
 * - `GET /.well-known/agent-card.json` (public): the Agent Card, protocol v1.0 (`supportedInterfaces` with a v1.0
 *   and a v0.3 JSON-RPC entry at `<base>/a2a`), plus the v0.3 card's top-level `url`, `protocolVersion` and
 *   `preferredTransport` so v0.3 clients read it too. One skill per public (built-in) agent; the API key as the
 *   security scheme (`Authorization: Bearer te_…`, or `X-API-Key`).
 * - `POST /a2a`: JSON-RPC through the SDK's JsonRpcTransportHandler (v1.0 methods `SendMessage`,
 *   `SendStreamingMessage`, `GetTask`, `CancelTask`, `SubscribeToTask`, push configs) or, when the request's
 *   `A2A-Version` is 0.3 or absent, its LegacyJsonRpcTransportHandler (`message/send`, `message/stream`,
 *   `tasks/get`, `tasks/cancel`, `tasks/resubscribe`, `tasks/pushNotificationConfig/*`), as the SDK's express
 *   adapter does; streaming answers are SSE. Errors are JSON-RPC errors with HTTP 200, never a 500.
 * - `POST /a2a/tasks/send`: the spec's v0.1-style alias, `{id, sessionId?, message: {role, parts}}` in, the task
 *   `{id, sessionId, status, artifacts}` out. `id` names an existing task of the caller to continue (an
 *   input-required one); otherwise a new task starts, in context `sessionId` (or `id`), and its id is the server's.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import { A2A_VERSION_HEADER, Extensions, HTTP_EXTENSION_HEADER, Role, type AgentCard, type Task } from '@a2a-js/sdk';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import type { DefaultRequestHandler } from '@a2a-js/sdk/server';
import {
  JsonRpcTransportHandler,
  ServerCallContext,
  defaultServerCallContextBuilder,
  validateVersion,
} from '@a2a-js/sdk/server';
import { A2A_LEGACY_PROTOCOL_VERSION, duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { requireCaller, serviceOrigin, type CallerState } from '../../../auth.ts';
import { invalidRequest } from '../../../errors.ts';
import type { ResolvedAgent } from '../../../../common/agents.ts';
import { KeyUser, maxA2aMessageChars, readMessage, textPart, type A2aServerDependencies } from './server.ts';
import { createA2aHandler } from './server.ts';
import { aliasBodySchema } from './schema.ts';

export interface A2aRouteDependencies extends A2aServerDependencies {
  /** The public (built-in) agents: one skill each. */
  publicAgents: () => Promise<ResolvedAgent[]>;
  /** AGENT_PUBLIC_URL, when set: the card's base URL (else the origin the request reached). */
  publicUrl?: string;
  version: string;
}

/** The Agent Card for a base URL (see the file comment). */
export function agentCard(base: string, agents: ResolvedAgent[], version: string): AgentCard {
  const url = `${base}/a2a`;
  return {
    name: 'Tessera agents',
    description:
      'Tessera’s agent service: a message is routed to one of its agents (or the one named by message metadata ' +
      '`agent_id`), which answers with its tools; calls with outside effects wait for approval (input-required).',
    supportedInterfaces: duplicateInterfacesForLegacy(
      [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
      ['JSONRPC'],
    ),
    provider: { organization: 'Tessera', url: base },
    version,
    capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      bearer: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: { description: 'A Tessera API key (te_…)', scheme: 'bearer', bearerFormat: 'te_' },
        },
      },
      apiKey: {
        scheme: {
          $case: 'apiKeySecurityScheme',
          value: { description: 'A Tessera API key (te_…)', location: 'header', name: 'X-API-Key' },
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }, { schemes: { apiKey: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills: agents.map((agent) => ({
      id: agent.id,
      name: agent.name,
      description: agent.description,
      tags: agent.routing.keywords.slice(0, 20),
      examples: agent.routing.examples.slice(0, 5),
      inputModes: ['text/plain'],
      outputModes: ['text/plain'],
      securityRequirements: [],
    })),
    signatures: [],
  };
}

const stateNames: Record<number, string> = {
  1: 'submitted',
  2: 'working',
  3: 'completed',
  4: 'failed',
  5: 'canceled',
  6: 'input-required',
  7: 'rejected',
  8: 'auth-required',
};

export function a2aRoutes(dependencies: A2aRouteDependencies) {
  const router = new Router<CallerState>();
  const base = (context: Context) => dependencies.publicUrl?.replace(/\/+$/, '') ?? serviceOrigin(context);
  let skills: ResolvedAgent[] = [];
  const handler: DefaultRequestHandler = createA2aHandler(
    () => agentCard(dependencies.publicUrl ?? 'http://localhost', skills, dependencies.version),
    dependencies,
  );
  const v1 = new JsonRpcTransportHandler(handler);
  const legacy = new LegacyJsonRpcTransportHandler(handler);

  router.get('/.well-known/agent-card.json', async (context) => {
    skills = await dependencies.publicAgents();
    const card = agentCard(base(context), skills, dependencies.version);
    const url = `${base(context)}/a2a`;
    context.set('Cache-Control', 'public, max-age=300');
    context.set('Vary', A2A_VERSION_HEADER);
    context.type = 'application/json';
    context.body = JSON.stringify({ ...card, url, protocolVersion: '0.3.0', preferredTransport: 'JSONRPC' });
  });

  const callContext = (context: Context & { state: CallerState }, requestedVersion: string | undefined) =>
    defaultServerCallContextBuilder({
      extensions: Extensions.parseServiceParameter(context.get(HTTP_EXTENSION_HEADER) || undefined),
      user: new KeyUser(requireCaller(context.state)),
      headers: context.headers,
      requestedVersion,
    });

  router.post('/a2a', async (context) => {
    requireCaller(context.state); // a 401 over HTTP, before any JSON-RPC
    const body = context.request.body as Record<string, unknown> | undefined;
    const requested = context.get(A2A_VERSION_HEADER) || undefined;
    const useLegacy = (requested ?? A2A_LEGACY_PROTOCOL_VERSION) === A2A_LEGACY_PROTOCOL_VERSION;
    const mapError = useLegacy
      ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError
      : JsonRpcTransportHandler.mapToJSONRPCError;
    const id = typeof body?.id === 'string' || typeof body?.id === 'number' ? body.id : null;
    const rpcError = (error: { code: number; message: string; data?: unknown }) => {
      context.status = 200;
      context.body = { jsonrpc: '2.0', id, error };
    };
    const oversize = oversizeMessage(body);
    if (oversize) return rpcError({ code: -32602, message: oversize });
    let answer;
    try {
      const call = callContext(context, requested);
      validateVersion(call.requestedVersion, await handler.getAgentCard(), 'JSONRPC');
      answer = await (useLegacy ? legacy : v1).handle(body ?? {}, call);
    } catch (error) {
      return rpcError(mapError(error));
    }
    if (typeof (answer as AsyncGenerator)[Symbol.asyncIterator] !== 'function') {
      context.body = answer;
      return;
    }
    const stream = answer as AsyncGenerator<unknown>;
    let first: IteratorResult<unknown>;
    try {
      first = await stream.next();
    } catch (error) {
      return rpcError(mapError(error));
    }
    // The SSE body is written by hand (as the SDK's express adapter does), each event a JSON-RPC response.
    context.respond = false;
    const response = context.res;
    context.req.socket.setNoDelay(true);
    context.req.socket.setTimeout(0);
    response.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    try {
      if (!first.done) response.write(`data: ${JSON.stringify(first.value)}\n\n`);
      for await (const event of { [Symbol.asyncIterator]: () => stream }) {
        if (response.destroyed) break;
        response.write(`data: ${JSON.stringify(event)}\n\n`);
      }
    } catch (error) {
      if (!response.destroyed) {
        response.write(`event: error\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, error: mapError(error) })}\n\n`);
      }
    } finally {
      if (!response.writableEnded) response.end();
    }
  });

  router.post('/a2a/tasks/send', async (context) => {
    const principal = requireCaller(context.state);
    const parsed = aliasBodySchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const body = parsed.data;
    const call = new ServerCallContext({ user: new KeyUser(principal) });
    let existing: Task | null = null;
    try {
      existing = await handler.getTask({ tenant: '', id: body.id, historyLength: 0 }, call);
    } catch (error) {
      if (!(error instanceof TaskNotFoundError)) throw error;
    }
    const result = await handler.sendMessage(
      {
        tenant: '',
        message: {
          messageId: crypto.randomUUID(),
          contextId: existing?.contextId ?? body.sessionId ?? '',
          taskId: existing?.id ?? '',
          role: Role.ROLE_USER,
          parts: body.message.parts.map((part) =>
            part.type === 'text'
              ? textPart(part.text)
              : { content: { $case: 'data', value: part.data }, metadata: undefined, filename: '', mediaType: '' },
          ),
          metadata: body.metadata,
          extensions: [],
          referenceTaskIds: [],
        },
        configuration: undefined,
        metadata: undefined,
      },
      call,
    );
    if (!('status' in result)) {
      context.body = { id: body.id, sessionId: body.sessionId ?? null, message: readMessage(result).text };
      return;
    }
    context.body = {
      id: result.id,
      sessionId: result.contextId,
      status: {
        state: stateNames[result.status?.state ?? 0] ?? 'unknown',
        message: result.status?.message ? readMessage(result.status.message).text : null,
        timestamp: result.status?.timestamp ?? null,
      },
      artifacts: result.artifacts.map((artifact) => ({
        name: artifact.name,
        parts: artifact.parts.flatMap((part) =>
          part.content?.$case === 'text' ? [{ type: 'text', text: part.content.value }] : [],
        ),
      })),
    };
  });

  return router;
}

/**
 * Why a JSON-RPC send carries too much text (over `maxA2aMessageChars` in its parts, or over 64 parts), or null.
 * Checked before the SDK sees it: a refusal inside the executor would become a failed task, not an error.
 */
function oversizeMessage(body: Record<string, unknown> | undefined): string | null {
  const params = body?.params as { message?: { parts?: unknown } } | undefined;
  const parts = params?.message?.parts;
  if (!Array.isArray(parts)) return null;
  if (parts.length > 64) return 'A message may have at most 64 parts';
  let chars = 0;
  for (const part of parts as Array<Record<string, unknown>>) {
    if (typeof part?.text === 'string') chars += part.text.length;
    if (part?.data !== undefined) chars += JSON.stringify(part.data).length;
    if (typeof part?.raw === 'string') chars += part.raw.length;
    if (typeof (part?.file as { bytes?: unknown } | undefined)?.bytes === 'string') {
      chars += ((part.file as { bytes: string }).bytes ?? '').length;
    }
  }
  return chars > maxA2aMessageChars ? `The message's parts are over ${maxA2aMessageChars} characters in all` : null;
}
