/** `POST /v1/chat/completions` (spec 4.1) and `GET /api/v1/requests/{id}`, the completion's trace. */
import Router from '@koa/router';
import { chatCompletionRequestSchema } from '../../../common/chat.ts';
import type { AuthState } from '../../auth.ts';
import { ApiError, invalidRequest } from '../../errors.ts';
import { ChunkPresenter, presentCompletion } from '../../presenters/completion.ts';
import { openSse } from '../../sse.ts';
import type { CompletionService } from './service.ts';

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

export function completionRoutes(completions: CompletionService, openStreams: OpenStreams) {
  const router = new Router<AuthState>();

  router.post('/v1/chat/completions', async (context) => {
    const parsed = chatCompletionRequestSchema.safeParse(context.request.body);
    if (!parsed.success) throw invalidRequest(parsed.error);
    const request = parsed.data;
    const idempotencyKey = context.get('idempotency-key') || undefined;
    if (idempotencyKey && idempotencyKey.length > 255) {
      throw new ApiError('invalid_request', 'Idempotency-Key must be at most 255 characters');
    }
    const started = await completions.start(context.state.principal.userId, request, idempotencyKey);
    context.set('X-Request-Id', started.requestId);

    if (!request.stream) {
      const settled = await started.result;
      if (!settled.ok) throw settled.error;
      context.body = presentCompletion(settled.value);
      return;
    }

    // Headers wait for the first event, so a completion that fails before any token gets a real HTTP status.
    const presenter = new ChunkPresenter(started.requestId, started.created, request.model);
    const events = completions.events(started);
    const first = await events.next();
    if (first.done) {
      const settled = await started.result;
      if (!settled.ok) throw settled.error;
    }
    const sse = openSse(context);
    sse.onClose(() => {
      if (!finished) void started.handle.cancel().catch(() => undefined);
    });
    let finished = false;
    const relay = (async () => {
      let errorSent = false;
      try {
        const pending = first.done ? [] : [first.value];
        const send = (item: (typeof pending)[number]) => {
          if (item.event.type === 'error') {
            sse.send({ error: { type: item.event.errorType, message: item.event.message } }, item.seq);
            errorSent = true;
            return;
          }
          for (const chunk of presenter.present(item.event)) sse.send(chunk, item.seq);
        };
        pending.forEach(send);
        for await (const item of events) send(item);
        const settled = await started.result;
        if (settled.ok) {
          if (request.stream_options?.include_usage) sse.send(presenter.usageChunk(settled.value.usage));
          sse.done();
        } else if (!errorSent) {
          sse.send(settled.error.body());
        }
      } catch (error) {
        if (!errorSent) sse.send({ error: { type: 'internal_error', message: (error as Error).message } });
      } finally {
        finished = true;
        sse.end();
      }
    })();
    // Drained means the last byte left the socket, not merely that the relay wrote it.
    const responseClosed = new Promise<void>((resolve) => context.res.once('close', () => resolve()));
    openStreams.track(relay.then(() => responseClosed));
  });

  router.get('/api/v1/requests/:id', async (context) => {
    const { principal } = context.state;
    context.body = await completions.trace(principal.userId, principal.operator, context.params.id!);
  });

  return router;
}
