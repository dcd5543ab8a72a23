/** The body of `POST /v1/embeddings`: OpenAI's, plus Tessera's `fallback_models`. */
import { z } from 'zod';

export const embeddingRequestSchema = z.object({
  model: z.string().min(1),
  /** A text or a list of texts. OpenAI also takes token ids; they are refused here (see the route). */
  input: z.union([
    z.string(),
    z.array(z.string()),
    z.array(z.number().int().nonnegative()),
    z.array(z.array(z.number().int().nonnegative())),
  ]),
  dimensions: z.number().int().positive().optional(),
  encoding_format: z.enum(['float', 'base64']).optional(),
  user: z.string().max(256).optional(),
  /**
   * Other embedding models that may serve if every provider of `model` fails (the response's `model` says which
   * did). Off by default: vectors of different models cannot be compared, so an index must not mix them.
   */
  fallback_models: z.array(z.string().min(1)).max(4).optional(),
});

export type EmbeddingRequestBody = z.infer<typeof embeddingRequestSchema>;
