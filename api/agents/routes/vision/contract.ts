/** Contract of `POST /vision/analyze` (api/openapi/contract.ts). */
import { json, route } from '../../../openapi/contract.ts';
import { visionBodySchema, visionResponseSchema } from './schema.ts';

export const visionContracts = [
  route({
    method: 'POST',
    path: '/vision/analyze',
    summary: 'Describe an image, or answer a question about it',
    description: 'A model without the vision capability is refused (400, `model`); `auto` picks among vision models.',
    tags: ['Media'],
    access: 'caller',
    request: { body: visionBodySchema },
    responses: { 200: json(visionResponseSchema.strict(), 'The answer, metered') },
    errors: {
      402: 'Not enough credits',
      403: 'The model is outside the caller’s plan',
      404: 'No such model',
      413: 'The image is too large',
      415: 'Not an image format a model reads',
      502: 'The model call failed',
      503: 'No provider available',
    },
  }),
];
