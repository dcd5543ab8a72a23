/** Contract of `POST /chat/suggest` (api/openapi/contract.ts). */
import { json, route } from '../../../openapi/contract.ts';
import { suggestBodySchema, suggestResponseSchema } from './schema.ts';

export const suggestContracts = [
  route({
    method: 'POST',
    path: '/chat/suggest',
    summary: 'Follow-up questions the user might ask next',
    tags: ['Chat'],
    access: 'caller',
    request: { body: suggestBodySchema },
    responses: { 200: json(suggestResponseSchema, 'The suggestions') },
    errors: {
      402: 'Not enough credits',
      404: 'No such session of the caller’s',
      502: 'The model failed or answered without suggestions',
      503: 'No provider available',
    },
  }),
];
