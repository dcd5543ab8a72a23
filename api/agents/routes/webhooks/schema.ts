/** Bodies of the inbound webhooks' management (routes.ts) and of Slack's Events API deliveries (deliveries.ts). */
import { z } from 'zod';
import { repositoryPattern } from '../../../../activities/webhooks/webhook-store.ts';

/** `POST /webhooks`. */
export const createWebhookSchema = z
  .object({
    agent_id: z.string().min(1).max(128),
    source: z.enum(['standard', 'github']).default('standard'),
    forward_to_messengers: z.boolean().optional(),
    repository: z.string().regex(repositoryPattern, 'must be owner/name').optional(),
    github_token: z.string().trim().min(1).max(512).optional(),
    comment_without_approval: z.boolean().optional(),
  })
  .strict()
  .superRefine((body, context) => {
    if (body.source === 'github' && !body.repository) {
      context.addIssue({ code: 'custom', path: ['repository'], message: 'a GitHub webhook needs its repository' });
    }
    if (body.source === 'standard') {
      for (const field of ['repository', 'github_token', 'comment_without_approval'] as const) {
        if (body[field] !== undefined) {
          context.addIssue({ code: 'custom', path: [field], message: 'is for GitHub webhooks (source: github)' });
        }
      }
    }
    if (body.source === 'github' && body.forward_to_messengers !== undefined) {
      context.addIssue({
        code: 'custom',
        path: ['forward_to_messengers'],
        message: 'is for standard webhooks (a GitHub agent answers on GitHub)',
      });
    }
  });

/** What a Slack Events API delivery carries (the fields read; the rest is let through). */
export const slackEnvelopeSchema = z.looseObject({
  type: z.string(),
  challenge: z.string().optional(),
  team_id: z
    .string()
    .regex(/^[A-Za-z0-9]{1,40}$/)
    .optional(),
  event_id: z.string().optional(),
  event: z
    .looseObject({
      type: z.string(),
      subtype: z.string().optional(),
      channel: z
        .string()
        .regex(/^[A-Za-z0-9]{1,40}$/)
        .optional(),
      channel_type: z.string().optional(),
      user: z.string().optional(),
      bot_id: z.string().optional(),
      text: z.string().optional(),
      ts: z
        .string()
        .regex(/^\d+\.\d+$/)
        .optional(),
      thread_ts: z
        .string()
        .regex(/^\d+\.\d+$/)
        .optional(),
    })
    .optional(),
});
