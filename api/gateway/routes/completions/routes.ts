/** `POST /v1/chat/completions` (spec 4.1) and `GET /api/v1/requests/{id}`, the completion's trace. */
import Router from '@koa/router';
import { chatCompletionRequestSchema } from '../../../../common/chat.ts';
import type { AuthState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import { ChunkPresenter, presentCompletion } from '../../presenters/completion.ts';
import { openSse } from '../../../sse.ts';
import type { Metrics } from '../../../observability.ts';
import type { CompletionService, StartedCompletion } from './service.ts';
import type { Usage } from '../../../../common/chat.ts';
import type { SequencedStreamEvent } from '../../../../common/completion.ts';
import type { Context } from 'koa';
import type { Admission } from '../../admission.ts';

/** Open streams, so a draining server can wait for them to finish. */
export class OpenStreams {
  private readonly streams = new Set<Promise<void>>();

  track(stream: Promise<void>): void {
    this.streams.add(stream);
    void stream.finally(() => this.streams.delete(stream));
  }

  get size(): number {
    return this.streams.size;
  }

  async settled(): Promise<void> {
    await Promise.allSettled([...this.streams]);
  }
}

/**
 * `POST /v1/chat/completions`. Mounted after authentication but not after the generic rate limiter: its Admission
 * counts the rate limits in the statement that reserves its credits.
 */
export function completionRoutes(
  completions: CompletionService,
  admission: Admission,
  openStreams: OpenStreams,
  metrics: Metrics,
) {
  const router = new Router<AuthState>();

  router.post('/v1/chat/completions', async (context) => {
    const timing = context.state.timing;
    const parsed = chatCompletionRequestSchema.safeParse(context.request.body);
    if (!parsed.success) throw invalidRequest(parsed.error);
    const request = parsed.data;
    const idempotencyKey = context.get('idempotency-key') || undefined;
    if (idempotencyKey && idempotencyKey.length > 255) {
      throw new ApiError('invalid_request', 'Idempotency-Key must be at most 255 characters');
    }
    const { principal } = context.state;
    const started = await completions.start(principal, request, {
      idempotencyKey,
      admit: (reservation) => admission.admit(context, principal, reservation),
      timing,
    });
    context.set('X-Request-Id', started.requestId);
    if (!started.local && !idempotencyKey) metrics.eagerStartsDeclined.inc();

    if (!request.stream) {
      try {
        const answer = await completions.answer(started);
        metrics.recordCompletion(answer.model, 'succeeded', false);
        if (timing) {
          timing.mark('answer');
          if (answer.upstreamMs !== undefined) timing.add('upstream', answer.upstreamMs);
          context.set('Server-Timing', timing.header());
        }
        context.body = presentCompletion(started.requestId, started.created, answer);
      } catch (error) {
        metrics.recordCompletion('none', error instanceof ApiError ? error.type : 'internal_error', false);
        throw error;
      }
      return;
    }

    await relayStream(context, completions, openStreams, started, {
      requestedModel: request.model,
      includeUsage: !!request.stream_options?.include_usage,
      onEnd: (model, outcome) => metrics.recordCompletion(model, outcome, true),
    });
  });

  return router;
}

/** A completion's trace, and the resumption of its stream (`GET /api/v1/requests/{id}[/stream]`). */
export function requestRoutes(completions: CompletionService, openStreams: OpenStreams) {
  const router = new Router<AuthState>();

  // Resumes (or re-reads) a streamed completion from the stream journal, after `Last-Event-ID` when given.
  router.get('/api/v1/requests/:id/stream', async (context) => {
    const { principal } = context.state;
    const lastEventId = context.get('last-event-id') || String(context.query.after ?? '');
    const afterSeq = lastEventId === '' ? -1 : Number(lastEventId);
    if (!Number.isInteger(afterSeq) || afterSeq < -1) {
      throw new ApiError('invalid_request', 'Last-Event-ID must be the integer id of an event', {
        param: 'Last-Event-ID',
      });
    }
    const started = await completions.rejoin(principal.userId, principal.operator, context.params.id!);
    await relayStream(context, completions, openStreams, started, {
      requestedModel: started.requestedModel,
      includeUsage: context.query.include_usage === 'true',
      afterSeq,
    });
  });

  router.get('/api/v1/requests/:id', async (context) => {
    const { principal } = context.state;
    context.body = await completions.trace(principal.userId, principal.operator, context.params.id!);
  });

  return router;
}

/**
 * Relays a streamed completion as SSE. Headers wait for the first event, so a completion that fails before
 * any token gets a real HTTP status. A client that hangs up does not cancel the completion: it runs to its
 * end, its events land in the journal, and the client may resume with `Last-Event-ID`.
 */
async function relayStream(
  context: Context,
  completions: CompletionService,
  openStreams: OpenStreams,
  started: StartedCompletion,
  options: {
    requestedModel: string;
    includeUsage: boolean;
    afterSeq?: number;
    onEnd?: (model: string, outcome: string) => void;
  },
): Promise<void> {
  const afterSeq = options.afterSeq ?? -1;
  const presenter = new ChunkPresenter(started.requestId, started.created, options.requestedModel);
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
        const chunks = presenter.present(item.event);
        if (item.seq <= afterSeq) return;
        if (item.event.type === 'usage') usage = item.event.usage;
        if (item.seq <= afterSeq) return;
        if (item.event.type === 'error') {
          sse.send({ error: { type: item.event.errorType, message: item.event.message } }, item.seq);
          errorSent = true;
          outcome = item.event.errorType;
          return;
        }
        for (const chunk of chunks) sse.send(chunk, item.seq);
      };
      if (!first.done) send(first.value);
      for await (const item of events) send(item);
      // A stream ends on its usage event (success) or an in-band error; otherwise the workflow gave up.
      if (usage) {
        if (options.includeUsage) sse.send(presenter.usageChunk(usage));
        sse.done();
      } else if (!errorSent) {
        const settled = await started.result();
        if (settled.ok) {
          if (options.includeUsage) sse.send(presenter.usageChunk(settled.value.usage));
          sse.done();
        } else {
          outcome = settled.error.type;
          sse.send(settled.error.body());
        }
      }
    } catch (error) {
      outcome = 'internal_error';
      if (!errorSent) sse.send({ error: { type: 'internal_error', message: (error as Error).message } });
    } finally {
      sse.end();
      options.onEnd?.(presenter.servedModel, outcome);
    }
  })();
  // Drained means the last byte left the socket, not merely that the relay wrote it.
  const responseClosed = new Promise<void>((resolve) => context.res.once('close', () => resolve()));
  openStreams.track(relay.then(() => responseClosed));
}
