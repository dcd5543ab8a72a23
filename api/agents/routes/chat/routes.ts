/**
 * The agent service's chat (spec 4.1, 4.11, 6), all needing a login (cookie, bearer key, or X-API-Key on /api/v1):
 *
 * - `POST /chat/stream/{session_id}` `{message, session_id?, image_data?, image_file_id?, image_file_ids?,
 *   preferred_agents?, preset_instruction?, replaces_turn?}`: routes the message, runs it as a durable turn, streams it
 *   (events.ts). `image_file_ids` (up to `maxAttachedImages`) attaches the caller's uploaded images (`POST /upload`),
 *   `image_file_id` one of them (the older field), as `image_data` attaches an image sent inline; the turn stores the
 *   files' ids (not an inline image). `replaces_turn` stands in for an earlier turn (`replacing`); with no image of
 *   its own the message attaches all that turn's stored images again (`imagesOf`).
 * - `POST /chat/loop/{session_id}` `{message, agent_id?, preferred_agents?, image_data?, image_file_id?, image_file_ids?,
 *   preset_instruction?, max_iterations?, budget_credits?}`: an agent loop, streamed the same way with `iteration`
 *   events.
 * - `GET /chat/turns/{turn_id}/stream`: re-attaches to a turn or loop (from `Last-Event-ID`, or the start).
 * - `POST /chat/turns/{turn_id}/cancel`: Stop. A loop stops after its current iteration; any other turn now, with what it
 *   streamed so far as its answer (its last event `cost` says `stop: cancelled`; workflows/chat-turn.workflow.ts).
 * - `POST /chat/approvals/{id}/approve` and `/reject` `{reason?}`: decide a tool call waiting for approval.
 * - `POST /api/v1/chat` `{message, session_id, agent_id?}`: the external API's chat, the same stream.
 *
 * The answer starts once the turn is accepted and routed (a turn that routes its message does so in its first step,
 * and the answer waits for it): refusals are plain HTTP errors, the routed agent's too. A client that hangs up does
 * not stop the turn. A workspace agent for a user without the Google login answers 302 to
 * `/auth/google` (spec 7.2) with the error as JSON.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import type { z } from 'zod';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import type { SequencedStreamEvent } from '../../../../common/completion.ts';
import { openSse } from '../../../sse.ts';
import type { OpenStreams } from '../../../gateway/routes/completions/routes.ts';
import type { AgentChat, AgentMessage } from '../../../services/agents/agent-chat.ts';
import { WorkspaceLoginRequired } from '../../../services/agents/agent-chat.ts';
import type { ChatService } from '../../../services/chat/service.ts';
import { presentAgentEvent } from './events.ts';
import type { OpenedUpload, UploadStore } from '../../../../activities/uploads/upload-store.ts';
import { readWhole } from '../../../../activities/uploads/upload-store.ts';
import type { ConversationStore } from '../../../../activities/conversations/conversation-store.ts';
import { decisionBody, externalBody, loopBody, maxImageBase64Chars, sessionKey, streamBody } from './schema.ts';
import sharp from 'sharp';

export function agentChatRoutes(dependencies: {
  agentChat: AgentChat;
  chat: ChatService;
  openStreams: OpenStreams;
  uploads: Pick<UploadStore, 'open'>;
  conversations: Pick<ConversationStore, 'sessionTurn'>;
}) {
  const { agentChat, chat, openStreams } = dependencies;
  const router = new Router<CallerState>();

  const parse = <T extends z.ZodType>(schema: T, context: Context): z.infer<T> => {
    const parsed = schema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    return parsed.data;
  };

  const pathSession = (context: Context & { params: Record<string, string> }, bodySession?: string): string => {
    const key = sessionKey.safeParse(context.params.session_id);
    if (!key.success) throw new ApiError('invalid_request', 'session_id: must be 1-128 letters, digits or : _ . @ -');
    if (bodySession !== undefined && bodySession !== key.data) {
      throw new ApiError('invalid_request', 'session_id in the body differs from the one in the path', {
        param: 'session_id',
      });
    }
    return key.data;
  };

  const begin = async (context: Context & { state: CallerState }, request: AgentMessage) => {
    const principal = requireCaller(context.state);
    try {
      const started = await agentChat.start(principal, request);
      context.set('X-Turn-Id', started.turnId);
      relay(context, openStreams, started.events);
    } catch (error) {
      if (error instanceof WorkspaceLoginRequired) {
        context.status = 302;
        context.set('Location', '/auth/google');
        context.body = error.body();
        return;
      }
      throw error;
    }
  };

  /**
   * The turn a message stands in for (`replaces_turn`): a turn of the caller's session that has ended (404 for any
   * other, as for a session not theirs; 409 while it runs: its answer is not there to stand beside yet), with its number
   * and the uploaded images its message carried. Null without `replaces_turn`.
   */
  const replacing = async (
    context: Context & { state: CallerState },
    key: string,
    turnId: string | undefined,
  ): Promise<ReplacedTurn | null> => {
    if (turnId === undefined) return null;
    const turn = await dependencies.conversations.sessionTurn(
      `user:${requireCaller(context.state).userId}`,
      key,
      turnId,
    );
    if (!turn) throw new ApiError('not_found', `No turn ${turnId} in session ${key}`, { param: 'replaces_turn' });
    if (turn.status === 'running') {
      throw new ApiError('conflict', `Turn ${turnId} is still running: stop it or wait for its end first`, {
        param: 'replaces_turn',
      });
    }
    return { turnId, number: turn.number, imageFileIds: turn.imageFileIds };
  };

  /**
   * The message's images: `image_data` as sent, and uploaded images by their ids (`image_file_id`, or up to
   * `maxAttachedImages` as `image_file_ids`; the caller's own only), whose ids the turn stores in order
   * (`imageFileIds`; an inline image is not stored). A message standing in for a turn (`replaced`) with no image of its
   * own attaches all that turn's stored images again, checked again as the caller's: a regenerated answer, the message
   * asked of another agent and an edited message all keep the images (as chat products do); images in the request
   * replace them. When one of those files has been deleted since, the message is refused (404, `replaces_turn`).
   */
  const imagesOf = async (
    context: Context & { state: CallerState },
    body: ImageFields,
    replaced: ReplacedTurn | null,
  ): Promise<{ images?: string[]; imageFileIds?: string[] }> => {
    const userId = requireCaller(context.state).userId;
    const images = body.image_data ? [body.image_data] : [];
    const sent = body.image_file_ids ?? (body.image_file_id ? [body.image_file_id] : []);
    if (sent.length) {
      const param = body.image_file_ids ? 'image_file_ids' : 'image_file_id';
      const inlineChars = body.image_data?.length ?? 0;
      images.push(...(await attachedImages(dependencies.uploads, userId, sent, { param, inlineChars })));
      return { images, imageFileIds: sent };
    }
    if (!body.image_data && replaced?.imageFileIds.length) {
      const inherited = await attachedImages(dependencies.uploads, userId, replaced.imageFileIds, {
        param: 'image_file_ids',
        ofTurn: replaced.turnId,
      });
      return { images: inherited, imageFileIds: replaced.imageFileIds };
    }
    return images.length ? { images } : {};
  };

  /** The fields a message's turn takes from `replaces_turn` and its images. */
  const standIn = async (
    context: Context & { state: CallerState },
    key: string,
    body: ImageFields & { replaces_turn?: string | undefined },
  ): Promise<Pick<AgentMessage, 'replaces' | 'images' | 'imageFileIds'>> => {
    const replaced = await replacing(context, key, body.replaces_turn);
    return { ...(replaced ? { replaces: replaced.number } : {}), ...(await imagesOf(context, body, replaced)) };
  };

  router.post('/chat/stream/:session_id', async (context) => {
    const body = parse(streamBody, context);
    const key = pathSession(context, body.session_id);
    await begin(context, {
      sessionKey: key,
      channel: 'web',
      message: body.message,
      ...(await standIn(context, key, body)),
      ...(body.preferred_agents?.length ? { preferredAgents: body.preferred_agents } : {}),
      ...(body.preset_instruction ? { presetInstruction: body.preset_instruction } : {}),
    });
  });

  router.post('/chat/loop/:session_id', async (context) => {
    const body = parse(loopBody, context);
    const key = pathSession(context, body.session_id);
    await begin(context, {
      sessionKey: key,
      channel: 'web',
      message: body.message,
      ...(await standIn(context, key, body)),
      ...(body.preferred_agents?.length ? { preferredAgents: body.preferred_agents } : {}),
      ...(body.agent_id ? { agentId: body.agent_id } : {}),
      ...(body.preset_instruction ? { presetInstruction: body.preset_instruction } : {}),
      loop: { maxIterations: body.max_iterations, budgetCredits: body.budget_credits ?? null },
    });
  });

  router.post('/api/v1/chat', async (context) => {
    const body = parse(externalBody, context);
    await begin(context, {
      sessionKey: body.session_id,
      channel: 'api',
      message: body.message,
      ...(body.agent_id ? { agentId: body.agent_id } : {}),
    });
  });

  router.get('/chat/turns/:turn_id/stream', async (context) => {
    const principal = requireCaller(context.state);
    const turnId = context.params.turn_id!;
    const lastEventId = context.get('last-event-id') || String(context.query.after ?? '');
    const afterSeq = lastEventId === '' ? -1 : Number(lastEventId);
    if (!Number.isInteger(afterSeq) || afterSeq < -1) {
      throw new ApiError('invalid_request', 'Last-Event-ID must be the integer id of an event', {
        param: 'Last-Event-ID',
      });
    }
    if (!(await chat.ownsTurn({ principal }, turnId))) throw new ApiError('not_found', `No chat turn ${turnId}`);
    relay(context, openStreams, chat.events({ turnId, subscription: null }, afterSeq));
  });

  router.post('/chat/turns/:turn_id/cancel', async (context) => {
    const principal = requireCaller(context.state);
    await agentChat.cancel(principal, context.params.turn_id!);
    context.status = 202;
    context.body = { turn_id: context.params.turn_id, cancelling: true };
  });

  for (const decision of ['approve', 'reject'] as const) {
    router.post(`/chat/approvals/:id/${decision}`, async (context) => {
      const principal = requireCaller(context.state);
      const body = parse(decisionBody, context);
      await agentChat.decide(principal, context.params.id!, decision === 'approve', body.reason);
      context.body = { id: context.params.id, approved: decision === 'approve' };
    });
  }

  return router;
}

/**
 * Relays a turn's events as `data:` lines with their positions as ids, then `data: [DONE]`. Headers go out at once;
 * failures after that arrive as an `error` event. A client that hangs up does not stop the turn.
 */
function relay(context: Context, openStreams: OpenStreams, events: AsyncGenerator<SequencedStreamEvent>): void {
  const sse = openSse(context);
  const relaying = (async () => {
    let ended = false;
    try {
      for await (const item of events) {
        const payload = presentAgentEvent(item.event);
        if (!payload) continue;
        sse.send(payload, item.seq);
        if (payload.type === 'cost' || payload.type === 'error') ended = true;
      }
      if (!ended) sse.send({ type: 'error', error_type: 'internal_error', message: 'The turn did not finish in time' });
    } catch (error) {
      if (!ended) sse.send({ type: 'error', error_type: 'internal_error', message: (error as Error).message });
    } finally {
      sse.done();
      sse.end();
    }
  })();
  const responseClosed = new Promise<void>((resolve) => context.res.once('close', () => resolve()));
  openStreams.track(relaying.then(() => responseClosed));
}

/** A turn a message stands in for (`replaces_turn`): its id, number, and the uploaded images its message carried. */
interface ReplacedTurn {
  turnId: string;
  number: number;
  imageFileIds: string[];
}

/** A message's image fields (streamBody, loopBody). */
interface ImageFields {
  image_data?: string | undefined;
  image_file_id?: string | undefined;
  image_file_ids?: string[] | undefined;
}

/** Kinds of upload a vision model can look at. */
const imageKinds = new Set(['png', 'jpeg', 'webp', 'gif']);
/** The longest sides an attached image is tried at, largest first: what vision models read at full detail, then less. */
const attachedImageSides = [1568, 1024, 768, 512];

/**
 * Uploaded images as data URLs for the turn, in order. Each is checked (the caller's, an image) before any is
 * converted, so a bad id is refused before the work; the errors name `where.param` (the field the ids came in). The
 * images share one image's room in the turn's input (`maxImageBase64Chars`, the turn's input travels through Temporal,
 * which refuses payloads over 2 MB), less what an `image_data` image sent beside them takes (`where.inlineChars`): with
 * n images each gets 1/n of it, scaled down further as needed; an image that fits in none is a 400. `where.ofTurn`:
 * the images are the ones the turn a message stands in for carried (a deleted one is refused naming `replaces_turn`).
 */
async function attachedImages(
  uploads: Pick<UploadStore, 'open'>,
  userId: string,
  fileIds: string[],
  where: { param: string; ofTurn?: string; inlineChars?: number },
): Promise<string[]> {
  const opened = [];
  for (const fileId of fileIds) opened.push(await openImage(uploads, userId, fileId, where));
  const inlineChars = where.inlineChars ?? 0;
  const room = Math.floor((maxImageBase64Chars - inlineChars) / fileIds.length);
  const images = [];
  for (const upload of opened) {
    const image = room > 0 ? await asDataUrl(upload, room) : null;
    if (image) images.push(image);
    else if (inlineChars > 0) {
      throw new ApiError(
        'invalid_request',
        `image_data leaves too little room for ${where.param}: a message's images share ${maxImageBase64Chars} ` +
          'characters of base64 (about 750 KB); send a smaller image_data, or the images in separate messages',
        { param: 'image_data' },
      );
    } else {
      throw new ApiError('invalid_request', `${where.param}: the image ${upload.id} is too detailed to attach`, {
        param: where.param,
      });
    }
  }
  return images;
}

/** One of the caller's uploads that is an image (404 for a file not theirs or gone, 400 for a file of another kind). */
async function openImage(
  uploads: Pick<UploadStore, 'open'>,
  userId: string,
  fileId: string,
  where: { param: string; ofTurn?: string },
): Promise<OpenedUpload> {
  const upload = await uploads.open(userId, fileId);
  if (!upload && where.ofTurn !== undefined) {
    throw new ApiError(
      'not_found',
      `The image file ${fileId} of turn ${where.ofTurn} is gone (deleted): attach images again (image_file_ids), or send the message as a new turn`,
      { param: 'replaces_turn' },
    );
  }
  if (!upload) throw new ApiError('not_found', `No file ${fileId}`, { param: where.param });
  if (!imageKinds.has(upload.kind)) {
    throw new ApiError('invalid_request', `${where.param}: the file ${fileId} is ${upload.kind}, not an image`, {
      param: where.param,
    });
  }
  return upload;
}

/**
 * An image as a JPEG data URL (a GIF's first frame) of at most `room` base64 characters: scaled down to fit, the
 * quality lowered before the size; null when even the smallest does not fit.
 */
async function asDataUrl(upload: OpenedUpload, room: number): Promise<string | null> {
  const bytes = await readWhole(upload);
  for (const side of attachedImageSides) {
    for (const quality of [85, 70, 50]) {
      const jpeg = await sharp(bytes, { animated: false, limitInputPixels: 50_000_000 })
        .rotate()
        .resize({ width: side, height: side, fit: 'inside', withoutEnlargement: true })
        .flatten({ background: '#ffffff' })
        .jpeg({ quality })
        .toBuffer();
      const base64 = jpeg.toString('base64');
      if (base64.length <= room) return `data:image/jpeg;base64,${base64}`;
    }
  }
  return null;
}
