/** `POST /v1/chat/completions` (spec 4.1) and `GET /api/v1/requests/{id}`, the completion's trace. */
import Router from '@koa/router';
import { chatCompletionRequestSchema } from '../../../../common/chat.ts';
import type { AuthState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import { presentCompletion } from '../../../../common/completion-presenter.ts';
import { relayStream, renderChunks, serveCompletion } from './relay.ts';
import type { Metrics } from '../../../observability.ts';
import type { CompletionService } from './service.ts';
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
    const parsed = chatCompletionRequestSchema.safeParse(context.request.body);
    if (!parsed.success) throw invalidRequest(parsed.error);
    const request = parsed.data;
    await serveCompletion(context, { completions, admission, openStreams, metrics }, request, {
      present: (started, answer) => presentCompletion(started.requestId, started.created, answer),
      renderer: (started) =>
        renderChunks(started, {
          requestedModel: request.model,
          includeUsage: !!request.stream_options?.include_usage,
        }),
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
    const renderer = renderChunks(started, {
      requestedModel: started.requestedModel,
      includeUsage: context.query.include_usage === 'true',
    });
    await relayStream(context, completions, openStreams, started, renderer, { afterSeq });
  });

  router.get('/api/v1/requests/:id', async (context) => {
    const { principal } = context.state;
    context.body = await completions.trace(principal.userId, principal.operator, context.params.id!);
  });

  return router;
}
