/** The body of `POST /v1/embeddings` (and of a batch line to it): OpenAI's, plus Tessera's `fallback_models`. */
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

/** The answer of `POST /v1/embeddings` (and of a batch line to it): vectors as floats, or base64 when asked. */
export function presentEmbeddings(
  embedded: { vectors: Float32Array[]; model: string; usage: { prompt_tokens: number; total_tokens: number } },
  encoding: EmbeddingRequestBody['encoding_format'],
) {
  const base64 = encoding === 'base64';
  return {
    object: 'list' as const,
    data: embedded.vectors.map((vector, index) => ({
      object: 'embedding' as const,
      index,
      // Little-endian float32, what the official SDKs ask for by default.
      embedding: base64
        ? Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64')
        : Array.from(vector),
    })),
    model: embedded.model,
    usage: embedded.usage,
  };
}
