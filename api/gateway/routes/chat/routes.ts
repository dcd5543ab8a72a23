/**
 * Session chat (spec 4.4 and 6): `POST /api/v1/chat`, `POST /api/v1/chat/stream`, the resumption of a turn's
 * stream, the caller's sessions, and `GET /api/v1/integrations` (the built-in tools).
 *
 * Who may call: the chat endpoints and one session's read or delete work with a key (the key's user's sessions) or
 * without one (a guest: guest sessions, reached by their id alone, so a guest's id must be hard to guess; see
 * `guestSessionPattern`). Listing sessions needs a key. Guests are limited per IP by the plans' guest row, keyed
 * callers by their plan, before a turn is accepted.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import {
  chatRequestSchema,
  type ChatRequest,
  type ChatTurnEvent,
  type ChatStreamEventName,
} from '../../../../common/chat-turn.ts';
import type { SequencedStreamEvent } from '../../../../common/completion.ts';
import { errorStatus, type ErrorType } from '../../../../common/errors.ts';
import type { Usage } from '../../../../common/chat.ts';
import type { ConversationStore } from '../../../../activities/conversations/conversation-store.ts';
import { builtInTools } from '../../../../activities/tools/index.ts';
import { toolJsonSchema } from '../../../../activities/tools/runtime.ts';
import type { ToolSettings } from '../../../../config/tool-settings.ts';
import type { AuthState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import type { RateLimits } from '../../../rate-limit.ts';
import { openSse, type SseWriter } from '../../../sse.ts';
import type { OpenStreams } from '../completions/routes.ts';
import { parseLinkCommand, type Linking } from '../../../services/chat/linking.ts';
import { ownerOf, type Admit, type ChatService, type Chatter } from '../../../services/chat/service.ts';

type ChatState = Partial<AuthState>;

/**
 * A guest's session id: a guest session is found by its id alone, so guests must send one nobody else would
 * (a `web:<uuid>` from the browser, say). Shared names such as the default `api:default` would let every guest
 * read every other guest's history.
 */
const guestSessionPattern = /^[A-Za-z0-9:_.@-]{16,128}$/;

function chatterOf(context: Context & { state: ChatState }): Chatter {
  const principal = context.state.principal;
  return principal ? { principal } : { guest: true };
}

/** Counts the request against the caller's limits: the plan's for a key's user, the guest row's per IP. */
async function limit(limits: RateLimits | undefined, context: Context & { state: ChatState }): Promise<void> {
  if (!limits) return;
  const subject = subjectOf(limits, context);
  if (subject) await limits.enforce(context, subject);
}

function subjectOf(limits: RateLimits, context: Context & { state: ChatState }) {
  const principal = context.state.principal;
  return principal ? limits.subjectFor(principal) : limits.guestSubject(context.ip);
}

/**
 * The same count, made inside the turn's opening transaction (ChatService.prepare): a message refused by its limits
 * leaves nothing behind, and a message let through costs no transaction of its own for it.
 */
function admission(limits: RateLimits | undefined, context: Context & { state: ChatState }): Admit | undefined {
  const subject = limits && subjectOf(limits, context);
  if (!limits || !subject) return undefined;
  return async (client) => limits.apply(context, subject, await limits.consumeWithin(client, subject));
}

export function chatRoutes(dependencies: {
  chat: ChatService;
  conversations: ConversationStore;
  linking: Linking;
  limits: RateLimits | undefined;
  openStreams: OpenStreams;
}) {
  const { chat, conversations, linking, limits, openStreams } = dependencies;

  /**
   * Runs a linking command (`/link`, `/link CODE`) typed in the web or API chat, counted against the caller's limits
   * as a message is; null for any other message (its count is taken when its turn opens).
   */
  const command = async (context: Context & { state: ChatState }, body: ChatRequest): Promise<string | null> => {
    const parsed = parseLinkCommand(body.message, false);
    if (!parsed) return null;
    await limit(limits, context);
    const owner = ownerOf(chatterOf(context));
    const session = await conversations.openSession(owner, body.session_id, body.channel);
    return linking.run({ ...session, owner }, parsed);
  };
  const router = new Router<ChatState>();

  const parseTurn = (context: Context & { state: ChatState }) => {
    const raw = context.request.body as Record<string, unknown> | undefined;
    const parsed = chatRequestSchema.safeParse(raw ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    if (!context.state.principal) {
      if (typeof raw?.session_id !== 'string') {
        throw new ApiError(
          'authentication_error',
          'Send Authorization: Bearer <API_KEY>, or a session_id to chat as a guest',
          { param: 'session_id' },
        );
      }
      if (!guestSessionPattern.test(parsed.data.session_id)) {
        throw new ApiError(
          'invalid_request',
          'A guest session_id must be at least 16 characters (e.g. web:<uuid>): guest sessions are reached by id alone',
          { param: 'session_id' },
        );
      }
    }
    return parsed.data;
  };

  router.post('/api/v1/chat', async (context) => {
    const body = parseTurn(context);
    const reply = await command(context, body);
    if (reply !== null) {
      context.body = { response: reply, session_id: body.session_id, command: 'link' };
      return;
    }
    // Server-Timing: receive, auth, plan, open (the opening's transaction), start (the workflow's eager start), model
    // (to the first event of the turn's first model call), turn (to the turn's last event: the answer, its settlement,
    // tools, the close), as the completions endpoint reports its stages (bench/chat.ts reads them).
    const timing = context.state.timing;
    const started = await chat.start(chatterOf(context), body, false, admission(limits, context), timing);
    context.set('X-Turn-Id', started.turnId);
    const toolCalls: Array<{ tool: string; ok: boolean }> = [];
    let modelMarked = false;
    for await (const item of chat.events(started)) {
      const event = item.event as ChatTurnEvent;
      if (!modelMarked && event.type !== 'turn-start') {
        timing?.mark('model');
        modelMarked = true;
      }
      if (event.type === 'tool-result') toolCalls.push({ tool: event.name, ok: event.ok });
      if (event.type === 'turn-error') throw turnError(event);
      if (event.type === 'turn-done') {
        if (timing) {
          timing.mark('turn');
          context.set('Server-Timing', timing.header());
        }
        context.body = {
          response: event.response,
          session_id: body.session_id,
          turn_id: started.turnId,
          model: event.model,
          usage: event.usage,
          credits: event.credits,
          tool_calls: toolCalls,
        };
        return;
      }
    }
    throw new ApiError('internal_error', `Turn ${started.turnId} did not finish in time; its answer will be stored`);
  });

  router.post('/api/v1/chat/stream', async (context) => {
    const body = parseTurn(context);
    const reply = await command(context, body);
    if (reply !== null) {
      // A command is answered at once, in the same events as a turn (without a turn id, model or usage).
      const sse = openSse(context);
      sse.event('start', { session_id: body.session_id, command: 'link' }, 0);
      sse.event('content', { delta: reply }, 1);
      sse.event('done', { session_id: body.session_id, command: 'link', credits: 0 }, 2);
      sse.end();
      return;
    }
    const started = await chat.start(chatterOf(context), body, true, admission(limits, context));
    context.set('X-Turn-Id', started.turnId);
    relayTurn(context, openStreams, chat.events(started), started.turnId);
  });

  // Resumes (or re-reads) a turn's stream from the journal, after `Last-Event-ID` when given.
  router.get('/api/v1/chat/turns/:id/stream', async (context) => {
    const turnId = context.params.id!;
    const lastEventId = context.get('last-event-id') || String(context.query.after ?? '');
    const afterSeq = lastEventId === '' ? -1 : Number(lastEventId);
    if (!Number.isInteger(afterSeq) || afterSeq < -1) {
      throw new ApiError('invalid_request', 'Last-Event-ID must be the integer id of an event', {
        param: 'Last-Event-ID',
      });
    }
    await limit(limits, context);
    if (!(await chat.ownsTurn(chatterOf(context), turnId))) {
      throw new ApiError('not_found', `No chat turn ${turnId}`);
    }
    relayTurn(context, openStreams, chat.events({ turnId, subscription: null }, afterSeq), turnId);
  });

  router.get('/api/v1/sessions', async (context) => {
    if (!context.state.principal) {
      throw new ApiError('authentication_error', 'Listing sessions needs Authorization: Bearer <API_KEY>');
    }
    await limit(limits, context);
    const sessions = await conversations.listSessions(ownerOf(chatterOf(context)));
    context.body = { object: 'list', data: sessions, total: sessions.length };
  });

  router.get('/api/v1/sessions/:id', async (context) => {
    await limit(limits, context);
    const session = await conversations.session(ownerOf(chatterOf(context)), context.params.id!);
    if (!session) throw new ApiError('not_found', `No session ${context.params.id}`);
    context.body = session;
  });

  // Deep links that open LINE or Telegram ready to link to this session (spec 4.9, way 1; linking.ts).
  router.get('/api/v1/sessions/:id/link', async (context) => {
    await limit(limits, context);
    const owner = ownerOf(chatterOf(context));
    const session = await conversations.findSession(owner, context.params.id!);
    if (!session) throw new ApiError('not_found', `No session ${context.params.id}`);
    context.body = { session_id: session.key, ...(await linking.deepLinks({ ...session, owner })) };
  });

  router.delete('/api/v1/sessions/:id', async (context) => {
    await limit(limits, context);
    const deleted = await chat.deleteSession(chatterOf(context), context.params.id!);
    if (deleted === 'not_found') throw new ApiError('not_found', `No session ${context.params.id}`);
    if (deleted === 'busy') {
      throw new ApiError('conflict', `Session ${context.params.id} has a turn still running; delete it once it ends`);
    }
    context.body = { id: context.params.id, deleted: true };
  });

  return router;
}

/** `GET /api/v1/integrations`: every built-in tool with its JSON schema, and whether this deployment offers it. */
export function integrationRoutes(toolSettings: ToolSettings, channels: Record<string, boolean>) {
  const router = new Router();
  router.get('/api/v1/integrations', (context) => {
    const tools = builtInTools
      .filter((tool) => !tool.agentsOnly)
      .map((tool) => ({
        name: tool.name,
        type: 'tool' as const,
        description: tool.description,
        configured: tool.configured(toolSettings),
        parameters: toolJsonSchema(tool),
        timeout_ms: tool.timeoutMs,
      }));
    context.body = {
      object: 'list',
      tools,
      channels: Object.entries(channels).map(([name, configured]) => ({ name, type: 'channel', configured })),
      active: tools.filter((tool) => tool.configured).map((tool) => tool.name),
    };
  });
  return router;
}

function turnError(event: Extract<ChatTurnEvent, { type: 'turn-error' }>): ApiError {
  const type = (event.errorType in errorStatus ? event.errorType : 'internal_error') as ErrorType;
  return new ApiError(type, event.message);
}

/** The SSE event a turn event is sent as (null: not sent), with its payload (schemas: `chatStreamEvents`). */
export function presentTurnEvent(event: SequencedStreamEvent['event']): [ChatStreamEventName, unknown] | null {
  switch (event.type) {
    case 'turn-start':
      return ['start', { turn_id: event.turnId, session_id: event.sessionId, model: event.model }];
    case 'text-delta':
      return event.text ? ['content', { delta: event.text }] : null;
    case 'reasoning-delta':
      return event.text ? ['thinking', { delta: event.text }] : null;
    case 'tool-start':
      return ['tool_start', { call_id: event.callId, tool: event.name, arguments: parseJson(event.arguments) }];
    case 'tool-result':
      return [
        'tool_result',
        event.ok
          ? { call_id: event.callId, tool: event.name, ok: true, result: parseJson(event.content) }
          : { call_id: event.callId, tool: event.name, ok: false, error: event.content },
      ];
    case 'turn-done':
      return [
        'done',
        {
          turn_id: event.turnId,
          session_id: event.sessionId,
          model: event.model,
          usage: event.usage satisfies Usage,
          credits: event.credits,
        },
      ];
    case 'turn-error':
      return ['error', { type: event.errorType, message: event.message }];
    // Model announcements, tool-call fragments (the turn reports whole calls as tool_start), finish and usage
    // (summed into done), and a model call's in-band error (the turn's own error event follows).
    default:
      return null;
  }
}

/**
 * Relays a turn's events as named SSE events, each with its stream position as `id`. The headers go out at once
 * (a turn queued behind the session's previous one may wait); the turn's failures arrive as an `error` event. A
 * client that hangs up does not stop the turn: it runs to its end, and the stream can be resumed.
 */
function relayTurn(
  context: Context,
  openStreams: OpenStreams,
  events: AsyncGenerator<SequencedStreamEvent>,
  turnId: string,
): void {
  const sse: SseWriter = openSse(context);
  const relay = (async () => {
    let ended = false;
    try {
      for await (const item of events) {
        const presented = presentTurnEvent(item.event);
        if (!presented) continue;
        sse.event(presented[0], presented[1], item.seq);
        if (presented[0] === 'done' || presented[0] === 'error') ended = true;
      }
      if (!ended) {
        sse.event('error', { type: 'internal_error', message: `Turn ${turnId} did not finish in time` });
      }
    } catch (error) {
      if (!ended) sse.event('error', { type: 'internal_error', message: (error as Error).message });
    } finally {
      sse.end();
    }
  })();
  const responseClosed = new Promise<void>((resolve) => context.res.once('close', () => resolve()));
  openStreams.track(relay.then(() => responseClosed));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
