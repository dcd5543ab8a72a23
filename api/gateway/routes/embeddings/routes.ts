/**
 * `POST /v1/embeddings`, OpenAI-compatible: a text or a list of texts, `dimensions`, `encoding_format` float or base64
 * (little-endian float32, what the official SDKs ask for by default). Mounted with the completions, after
 * authentication: its Admission counts the rate limits in the statement that holds its credits. The work is
 * EmbeddingService's (activities/embeddings/embedding-service.ts), the same path RAG uses.
 */
import Router from '@koa/router';
import type { AuthState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import type { Admission } from '../../admission.ts';
import { EmbeddingError, type EmbeddingService } from '../../../../activities/embeddings/embedding-service.ts';
import { embeddingRequestSchema, presentEmbeddings } from '../../../../common/embedding-request.ts';

export function embeddingRoutes(embeddings: EmbeddingService, admission: Admission) {
  const router = new Router<AuthState>();

  router.post('/v1/embeddings', async (context) => {
    const parsed = embeddingRequestSchema.safeParse(context.request.body);
    if (!parsed.success) throw invalidRequest(parsed.error);
    const body = parsed.data;
    const texts = typeof body.input === 'string' ? [body.input] : body.input;
    if (texts.some((item) => typeof item !== 'string')) {
      // Token ids are one tokenizer's numbering: another provider (failover) or the local engine would misread them.
      throw new ApiError('invalid_request', 'input: token arrays are not supported; send the text', {
        param: 'input',
      });
    }
    const { principal } = context.state;
    try {
      const embedded = await embeddings.run(
        {
          userId: principal.userId,
          metered: !principal.operator,
          account: principal.operator ? null : { plan: principal.plan, customModels: principal.customLimits?.models },
        },
        {
          userId: principal.userId,
          model: body.model,
          texts: texts as string[],
          dimensions: body.dimensions,
          fallbackModels: body.fallback_models,
          user: body.user,
        },
        (reservation) => admission.admit(context, principal, reservation),
      );
      context.set('X-Request-Id', embedded.requestId);
      context.body = presentEmbeddings(embedded, body.encoding_format);
    } catch (error) {
      if (!(error instanceof EmbeddingError)) throw error;
      throw new ApiError(error.type, error.message, {
        param: error.param,
        retryAfterSeconds: error.retryAfterSeconds,
        requiredPlan: error.requiredPlan,
      });
    }
  });

  return router;
}
