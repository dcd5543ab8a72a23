/** `POST /vision/analyze` (api/agents/routes/vision/routes.ts): its body and its answer. */
import { z } from 'zod';

export const defaultVisionPrompt = 'Describe this image in detail.';

export const visionBodySchema = z.strictObject({
  /**
   * The image: an http(s) URL (fetched by the service through its URL guard: public addresses only, at most 20 MiB),
   * or base64, optionally as a `data:` URI (at most 5 MiB). PNG, JPEG, WebP or GIF, whatever the URL or type says.
   */
  image: z.string().trim().min(1, 'give the image: an http(s) URL or base64'),
  /** The question about the image; without one, a description. */
  prompt: z.string().trim().min(1).max(4000, 'must be at most 4000 characters').default(defaultVisionPrompt),
  /** A model with the vision capability, or `auto`; default AGENT_VISION_MODEL. */
  model: z.string().trim().min(1).max(200).optional(),
  max_tokens: z.number().int().min(1).max(4096).default(1024),
});

export const visionResponseSchema = z.object({
  /** The model's description of the image, or its answer to the prompt. */
  answer: z.string(),
  /** The model that answered (a failover's when the first failed). */
  model: z.string(),
  usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int() }),
  /** What the call was charged (the ledger's settlement; 0 for the operator). */
  credits_used: z.number().int(),
});

export type VisionResponse = z.infer<typeof visionResponseSchema>;
