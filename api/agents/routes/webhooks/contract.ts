/** Contracts of inbound webhooks: their management, their runs and the receivers (api/openapi/contract.ts). */
import { z } from 'zod';
import { isoDate, json, route } from '../../../openapi/contract.ts';
import { createWebhookSchema, slackEnvelopeSchema } from './schema.ts';

const tags = ['Inbound webhooks'];

const webhook = z
  .strictObject({
    id: z.string(),
    source: z.enum(['standard', 'github']),
    agent_id: z.string(),
    repository: z.string().nullable(),
    forward_to_messengers: z.boolean(),
    can_comment: z.boolean(),
    comment_without_approval: z.boolean(),
    previous_secret_valid_until: isoDate.nullable(),
    created_at: isoDate,
    url: z.string().meta({ description: 'Where the sender delivers (it names the webhook in `?hook=`)' }),
  })
  .meta({ id: 'Webhook' });
const withSecret = webhook.extend({ secret: z.string().meta({ description: 'Shown this once' }) });

/** A webhook or automation run (api/services/webhooks/runs.ts `WebhookRunView`). */
export const webhookRunSchema = z
  .strictObject({
    id: z.string(),
    source: z.enum(['standard', 'github', 'slack', 'automation']),
    agent_id: z.string().nullable(),
    delivery_id: z.string(),
    status: z.enum(['queued', 'running', 'waiting_for_approval', 'done', 'failed']),
    session_id: z.string(),
    turn_id: z.string().nullable(),
    answer: z.string().nullable(),
    error: z.string().nullable(),
    queue_position: z.number().int().optional().meta({
      description: 'While a prepared run waits for a slot in the capacity queue (status `queued`): 1 = next',
    }),
    pending_approval: z
      .strictObject({
        approval_id: z.string(),
        tool: z.string(),
        arguments: z.unknown(),
        expires_at: isoDate,
        approve: z.string(),
        reject: z.string(),
      })
      .optional(),
    callback: z
      .strictObject({
        url: z.string(),
        status: z.string().nullable(),
        attempts: z.number().int(),
        error: z.string().nullable(),
      })
      .optional(),
    created_at: isoDate,
    finished_at: isoDate.nullable(),
  })
  .meta({ id: 'WebhookRun' });

const accepted = json(
  z.strictObject({
    run_id: z.string(),
    status: z.enum(['queued', 'running', 'done', 'failed']),
    duplicate: z.boolean().meta({ description: 'This delivery id was received before: its first run' }),
    status_url: z.string(),
  }),
  'The run, started (or the first run of a repeated delivery)',
);
const notFound = { 404: 'No such webhook of the caller’s' } as const;
const deliveryErrors = {
  401: 'A missing or bad signature, or no webhook matches the URL',
  413: 'The body is past the route’s limit',
} as const;

export const webhookContracts = [
  route({
    method: 'POST',
    path: '/webhooks',
    summary: 'Create an inbound webhook for an agent',
    tags,
    access: 'caller',
    request: { body: createWebhookSchema },
    responses: { 201: json(withSecret, 'The webhook with its secret (shown this once)') },
    errors: {
      400: 'Invalid body, or the operator key (it has no account)',
      404: 'No such agent of the caller’s',
      409: 'The caller has a webhook for this repository already',
      503: 'TOKEN_ENCRYPTION_KEY is not set',
    },
  }),
  route({
    method: 'GET',
    path: '/webhooks',
    summary: 'The caller’s webhooks (without secrets)',
    tags,
    access: 'caller',
    responses: { 200: json(z.strictObject({ webhooks: z.array(webhook) }), 'The webhooks') },
    errors: { 503: 'TOKEN_ENCRYPTION_KEY is not set' },
  }),
  route({
    method: 'GET',
    path: '/webhooks/:id',
    summary: 'One webhook (without its secret)',
    tags,
    access: 'caller',
    responses: { 200: json(webhook, 'The webhook') },
    errors: { ...notFound, 503: 'TOKEN_ENCRYPTION_KEY is not set' },
  }),
  route({
    method: 'POST',
    path: '/webhooks/:id/rotate-secret',
    summary: 'Replace a webhook’s secret (the previous one works 24 hours more)',
    tags,
    access: 'caller',
    responses: { 200: json(withSecret, 'The webhook with its new secret (shown this once)') },
    errors: { ...notFound, 503: 'TOKEN_ENCRYPTION_KEY is not set' },
  }),
  route({
    method: 'DELETE',
    path: '/webhooks/:id',
    summary: 'Delete a webhook',
    tags,
    access: 'caller',
    responses: { 200: json(z.strictObject({ id: z.string(), deleted: z.literal(true) }), 'Deleted') },
    errors: { ...notFound, 503: 'TOKEN_ENCRYPTION_KEY is not set' },
  }),
  route({
    method: 'GET',
    path: '/webhook/runs/:id',
    summary: 'A webhook or automation run: status, answer or error, pending approval, callback',
    tags,
    access: 'caller',
    responses: { 200: json(webhookRunSchema, 'The run') },
    errors: { 404: 'No such run of the caller’s' },
  }),
  route({
    method: 'POST',
    path: '/webhook/github',
    summary: 'GitHub’s webhook deliveries',
    description:
      'Signed by `X-Hub-Signature-256` with the webhook’s secret; `X-GitHub-Delivery` deduplicates. `ping` is answered 200; events that wake the agent 202 with the run; others 200 `{ignored}`.',
    tags,
    access: 'signed',
    request: {
      query: z.object({ hook: z.string() }),
      headers: z.object({
        'x-hub-signature-256': z.string(),
        'x-github-event': z.string(),
        'x-github-delivery': z.string(),
      }),
      content: { 'application/json': { schema: z.looseObject({}) } },
    },
    responses: {
      200: json(
        z.union([
          z.strictObject({ ok: z.literal(true), hook: z.string(), zen: z.string().nullable() }),
          z.strictObject({ ignored: z.string() }),
        ]),
        'A ping, or an event that wakes no agent',
      ),
      202: accepted,
    },
    errors: deliveryErrors,
  }),
  route({
    method: 'POST',
    path: '/webhook/:agent_id',
    summary: 'A Standard Webhooks delivery: its body is the agent’s message',
    description:
      'Signed by Standard Webhooks (`webhook-id`, `webhook-timestamp` within 5 minutes, `webhook-signature`).',
    tags,
    access: 'signed',
    request: {
      query: z.object({ hook: z.string() }),
      headers: z.object({ 'webhook-id': z.string(), 'webhook-timestamp': z.string(), 'webhook-signature': z.string() }),
      content: { 'application/json': { schema: z.unknown() }, 'text/plain': { schema: z.string() } },
    },
    responses: { 202: accepted },
    errors: deliveryErrors,
  }),
  route({
    method: 'POST',
    path: '/slack/events',
    summary: 'Slack’s Events API',
    description:
      'Signed with the Slack signing secret (`X-Slack-Signature`, `X-Slack-Request-Timestamp` within 5 minutes). `url_verification` is answered with its challenge; mentions and direct messages 200 at once, the reply posted in the thread.',
    tags,
    access: 'signed',
    request: {
      headers: z.object({ 'x-slack-signature': z.string(), 'x-slack-request-timestamp': z.string() }),
      content: { 'application/json': { schema: slackEnvelopeSchema } },
    },
    responses: {
      200: json(z.union([z.strictObject({ challenge: z.string() }), z.strictObject({})]), 'Received'),
    },
    errors: { ...deliveryErrors, 503: 'Slack is not configured' },
  }),
];
