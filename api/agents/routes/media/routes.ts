/**
 * The agent service's doors onto the gateway's media engines (spec 4.13): `POST /tts`, `POST /transcribe` and `POST
 * /image/generate` run the gateway's own handlers of `POST /api/v1/media/tts`, `/stt` and `/image`
 * (api/gateway/routes/media/): the same engines and fallbacks, prices, credit holds, idempotency, errors and durable
 * `mediaJob` workflows. A door needs a caller (cookie or key) and counts against the caller's plan limits as the
 * gateway's keyed routes do (`limitKeyed`: the same `user:<id>` windows, shared by both services). Result files are
 * the gateway's `/api/v1/media/files/{name}` paths, which this service serves too (api/agents/app.ts).
 */
import Router from '@koa/router';
import type { Middleware } from 'koa';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { limitKeyed, type RateLimits } from '../../../rate-limit.ts';
import type { MediaInputOptions } from '../../../gateway/routes/media/inputs.ts';
import { ttsHandler, type MediaContext } from '../../../gateway/routes/media/routes.ts';
import type { MediaService } from '../../../gateway/routes/media/service.ts';
import { imageHandler, sttHandler } from '../../../gateway/routes/media/sync-routes.ts';

export function mediaDoorRoutes(dependencies: { media: MediaService; inputs: MediaInputOptions; limits?: RateLimits }) {
  const { media, inputs, limits } = dependencies;
  const router = new Router<CallerState>();
  const callerOnly: Middleware<CallerState> = async (context, next) => {
    requireCaller(context.state);
    await next();
  };
  const limited = (limits ? limitKeyed(limits) : (_context, next) => next()) as Middleware<CallerState>;
  // After `callerOnly` the state carries a principal: the request is the keyed one the gateway's handlers take.
  const door = (handler: (context: MediaContext) => Promise<void>) => (context: unknown) =>
    handler(context as MediaContext);
  router.post('/tts', callerOnly, limited, door(ttsHandler(media)));
  router.post('/transcribe', callerOnly, limited, door(sttHandler(media, inputs)));
  router.post('/image/generate', callerOnly, limited, door(imageHandler(media)));
  return router;
}
