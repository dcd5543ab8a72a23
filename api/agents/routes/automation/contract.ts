/** Contracts of the automation tools' integration (api/openapi/contract.ts). */
import { z } from 'zod';
import { json, route } from '../../../openapi/contract.ts';
import { webhookRunSchema } from '../webhooks/contract.ts';
import { triggerSchema } from './schema.ts';

const tags = ['Inbound webhooks'];

const triggered = webhookRunSchema.extend({
  duplicate: z.boolean(),
  status_url: z.string(),
  callback: z
    .union([webhookRunSchema.shape.callback.unwrap(), z.string()])
    .optional()
    .meta({ description: 'The callback’s delivery; on a 202, `pending` or `none: poll status_url`' }),
});

export const automationContracts = [
  route({
    method: 'GET',
    path: '/automation/agents',
    summary: 'The agents the key can trigger',
    tags,
    access: 'caller',
    responses: {
      200: json(
        z.strictObject({
          agents: z.array(
            z.strictObject({ id: z.string(), name: z.string(), description: z.string(), builtin: z.boolean() }),
          ),
        }),
        'The agents',
      ),
    },
  }),
  route({
    method: 'POST',
    path: '/automation/trigger',
    summary: 'Run an agent for Zapier, Make or n8n',
    description:
      'Waits up to AUTOMATION_SYNC_WAIT: finished by then, 200 with the answer; else 202, and the run is POSTed to `callback_url` when it ends. `Idempotency-Key` names the run.',
    tags,
    access: 'caller',
    request: { body: triggerSchema, headers: z.object({ 'idempotency-key': z.string().optional() }) },
    responses: { 200: json(triggered, 'The run, finished'), 202: json(triggered, 'The run, still going') },
    errors: { 404: 'No such agent of the caller’s' },
  }),
];
