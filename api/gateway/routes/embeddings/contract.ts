/** Contract of `POST /v1/embeddings` (api/openapi/contract.ts). */
import { z } from 'zod';
import { json, route } from '../../../openapi/contract.ts';
import { embeddingRequestSchema } from '../../../../common/embedding-request.ts';

export const embeddingContracts = [
  route({
    method: 'POST',
    path: '/v1/embeddings',
    summary: 'Embeddings (OpenAI-compatible)',
    tags: ['Embeddings'],
    access: 'caller',
    request: { body: embeddingRequestSchema },
    responses: {
      200: json(
        z.strictObject({
          object: z.literal('list'),
          data: z.array(
            z.strictObject({
              object: z.literal('embedding'),
              index: z.number().int(),
              embedding: z
                .union([z.array(z.number()), z.string()])
                .meta({ description: 'Floats, or little-endian float32 in base64 with `encoding_format: base64`' }),
            }),
          ),
          model: z.string(),
          usage: z.strictObject({ prompt_tokens: z.number().int(), total_tokens: z.number().int() }),
        }),
        'The vectors, in input order',
      ),
    },
    errors: {
      402: 'Not enough credits',
      403: 'The model is outside the caller’s plan',
      404: 'No such embedding model',
      502: 'Every provider failed',
      503: 'No provider available',
    },
  }),
];
