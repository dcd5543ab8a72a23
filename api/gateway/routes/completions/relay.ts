/**
 * A completion served to its client, shared by every door of the gateway that answers one (the chat completions API,
 * the Messages door): `serveCompletion` starts it from the door's translated request (admitted, idempotent, one
 * workflow) and answers it whole (the door's `present`) or streamed (the door's `StreamRenderer`). The stream's relay
 * owns what every door does alike: headers wait for the first event, so a completion
 * that fails before any token gets a real HTTP status (in the door's error shape); events already sent before
 * `afterSeq` are read but not sent again; a stream ends on its usage event, an in-band error, or the workflow's own
 * end; a client that hangs up does not cancel the completion, whose events land in the journal for a resume. A
 * `StreamRenderer` owns only what the client reads.
 */
import type { Context } from 'koa';
import type { AuthState } from '../../../auth.ts';
import { ApiError } from '../../../errors.ts';
import type { Metrics } from '../../../observability.ts';
import type { Admission } from '../../admission.ts';
import { openSse, type SseWriter } from '../../../sse.ts';
import { ChunkPresenter } from '../../../../common/completion-presenter.ts';
import type { ChatCompletionRequest, Usage } from '../../../../common/chat.ts';
import type { CompletionResult, SequencedStreamEvent } from '../../../../common/completion.ts';
import type { CompletionAnswer, CompletionService, StartOptions, StartedCompletion } from './service.ts';
import type { OpenStreams } from './routes.ts';

/** What a door's client reads of a completion's stream. */
export interface StreamRenderer {
  /** The model the stream names: the served one once the stream announced it. */
  readonly servedModel: string;
  /** One event of the stream, in order; `replay`: sent before (up to `afterSeq`), read for state only. */
  event(sse: SseWriter, item: SequencedStreamEvent, replay: boolean): void;
  /** The stream's end needs the workflow's result (`end` then gets it): a cancellable response's. */
  readonly needsResult?: boolean;
  /** The stream ended with its answer: its usage (and the workflow's result, with `needsResult`). */
  end(sse: SseWriter, usage: Usage, result?: CompletionResult): void;
  /** The stream ended failed: an in-band error (`seq`: its position) or the workflow's failure. */
  fail(sse: SseWriter, error: ApiError, seq?: number): void;
}

/** What serving a completion takes from the gateway. */
export interface CompletionDoor {
  completions: CompletionService;
  admission: Admission;
  openStreams: OpenStreams;
  metrics: Metrics;
}

/**
 * Starts the door's request as a completion (with the request's Idempotency-Key) and answers it: whole through
 * `present`, or, with `stream`, as the events `renderer` writes. `X-Request-Id` names it.
 */
export async function serveCompletion(
  context: Context,
  door: CompletionDoor,
  request: ChatCompletionRequest,
  options: Pick<StartOptions, 'idPrefix' | 'summary' | 'kind' | 'response' | 'admittedWrite' | 'eager'> & {
    /** The whole answer as the door shows it (awaited). */
    present: (started: StartedCompletion, answer: CompletionAnswer) => unknown;
    /** Answers at once, without waiting for the answer or its stream (a background response not streamed). */
    accepted?: (started: StartedCompletion) => unknown;
    renderer: (started: StartedCompletion) => StreamRenderer;
  },
): Promise<StartedCompletion> {
  const { completions, admission, metrics } = door;
  const idempotencyKey = context.get('idempotency-key') || undefined;
  if (idempotencyKey && idempotencyKey.length > 255) {
    throw new ApiError('invalid_request', 'Idempotency-Key must be at most 255 characters');
  }
  const wait = context.get('x-tessera-capacity-wait');
  const capacityWaitSeconds = Number(wait || 0);
  if (wait && (!/^\d{1,2}$/.test(wait) || capacityWaitSeconds > 60)) {
    throw new ApiError('invalid_request', 'X-Tessera-Capacity-Wait is a number of seconds from 0 to 60');
  }
  const state = context.state as AuthState;
  const { principal, timing } = state;
  const started = await completions.start(principal, request, {
    idempotencyKey,
    admit: (reservation, alongside) => admission.admit(context, principal, reservation, alongside),
    timing,
    idPrefix: options.idPrefix,
    summary: options.summary,
    kind: options.kind,
    response: options.response,
    admittedWrite: options.admittedWrite,
    eager: options.eager,
    capacityWaitSeconds,
  });
  context.set('X-Request-Id', started.requestId);
  if (!started.local && !idempotencyKey) metrics.eagerStartsDeclined.inc();

  if (options.accepted) {
    context.body = options.accepted(started);
    return started;
  }
  if (!request.stream) {
    try {
      const answer = await completions.answer(started);
      metrics.recordCompletion(answer.model, 'succeeded', false);
      if (timing) {
        timing.mark('answer');
        if (answer.upstreamMs !== undefined) timing.add('upstream', answer.upstreamMs);
        context.set('Server-Timing', timing.header());
      }
      context.body = await options.present(started, answer);
    } catch (error) {
      metrics.recordCompletion('none', error instanceof ApiError ? error.type : 'internal_error', false);
      throw error;
    }
    return started;
  }
  await relayStream(context, completions, door.openStreams, started, options.renderer(started), {
    onEnd: (model, outcome) => metrics.recordCompletion(model, outcome, true),
  });
  return started;
}

export interface RelayOptions {
  afterSeq?: number;
  onEnd?: (model: string, outcome: string) => void;
}

export async function relayStream(
  context: Context,
  completions: CompletionService,
  openStreams: OpenStreams,
  started: StartedCompletion,
  renderer: StreamRenderer,
  options: RelayOptions = {},
): Promise<void> {
  const afterSeq = options.afterSeq ?? -1;
  // Events up to afterSeq are read too (they set the served model) but not sent again.
  const events = completions.events(started);
  const first = await events.next();
  const timing = (context.state as AuthState).timing;
  if (timing) {
    timing.mark('first-event');
    context.set('Server-Timing', timing.header());
  }
  if (first.done) {
    const settled = await started.result();
    if (!settled.ok) {
      options.onEnd?.('none', settled.error.type);
      throw settled.error;
    }
  }
  const sse = openSse(context);
  const relay = (async () => {
    let errorSent = false;
    let usage: Usage | null = null;
    let outcome = 'succeeded';
    try {
      const send = (item: SequencedStreamEvent) => {
        const replay = item.seq <= afterSeq;
        if (item.event.type === 'usage' && !replay) usage = item.event.usage;
        if (item.event.type === 'error') {
          if (replay) return;
          renderer.fail(sse, new ApiError(item.event.errorType, item.event.message), item.seq);
          errorSent = true;
          outcome = item.event.errorType;
          return;
        }
        renderer.event(sse, item, replay);
      };
      if (!first.done) send(first.value);
      for await (const item of events) send(item);
      // A stream ends on its usage event (success) or an in-band error; otherwise the workflow gave up.
      if (usage) {
        const settled = renderer.needsResult ? await started.result() : null;
        renderer.end(sse, usage, settled?.ok ? settled.value : undefined);
      } else if (!errorSent) {
        const settled = await started.result();
        if (settled.ok) {
          renderer.end(sse, settled.value.usage, settled.value);
        } else {
          outcome = settled.error.type;
          renderer.fail(sse, settled.error);
        }
      }
    } catch (error) {
      outcome = 'internal_error';
      if (!errorSent) renderer.fail(sse, new ApiError('internal_error', (error as Error).message));
    } finally {
      sse.end();
      options.onEnd?.(renderer.servedModel, outcome);
    }
  })();
  // Drained means the last byte left the socket, not merely that the relay wrote it.
  const responseClosed = new Promise<void>((resolve) => context.res.once('close', () => resolve()));
  openStreams.track(relay.then(() => responseClosed));
}

/** The chat completions API's stream: OpenAI chunks, the usage chunk when asked for, `[DONE]`. */
export function renderChunks(
  started: StartedCompletion,
  options: { requestedModel: string; includeUsage: boolean },
): StreamRenderer {
  const presenter = new ChunkPresenter(started.requestId, started.created, options.requestedModel);
  return {
    get servedModel() {
      return presenter.servedModel;
    },
    event(sse, item, replay) {
      const chunks = presenter.present(item.event);
      if (replay) return;
      for (const chunk of chunks) sse.send(chunk, item.seq);
    },
    end(sse, usage) {
      if (options.includeUsage) sse.send(presenter.usageChunk(usage));
      sse.done();
    },
    fail(sse, error, seq) {
      // An in-band error event is the type and message; the workflow's failure its whole error body.
      sse.send(seq === undefined ? error.body() : { error: { type: error.type, message: error.message } }, seq);
    },
  };
}
