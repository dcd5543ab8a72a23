/**
 * `send_email`: sends a plain-text e-mail through the deployment's SMTP server (SMTP_URL, sender MAIL_FROM). An
 * effect outside the conversation, so every call waits for the user's approval (`needsApproval`), and it is sent
 * once per tool call: the mail service keys it by the call (`callKey`), so a retried or replayed call does not send
 * again. Offered only where SMTP is configured.
 */
import { z } from 'zod';
import { defineTool, ToolError } from './tool.ts';

export const sendEmailTool = defineTool({
  name: 'send_email',
  description:
    'Send a plain-text e-mail on the user’s behalf. The user is asked to approve every e-mail before it is sent.',
  input: z
    .object({
      to: z.email().max(254),
      subject: z.string().trim().min(1).max(200),
      body: z.string().min(1).max(20_000),
    })
    .strict(),
  timeoutMs: 30_000,
  retry: { maximumAttempts: 3, initialIntervalMs: 1_000 },
  maxOutputChars: 500,
  needsApproval: true,
  agentsOnly: true,
  configured: (settings) => settings.mailConfigured === true,
  async run({ to, subject, body }, context) {
    const mail = context.services?.mail;
    if (!mail) throw new ToolError('no mail server is configured here');
    if (!context.callKey) throw new ToolError('this call has no idempotency key');
    const sent = await mail.send({ to, subject, text: body, idempotencyKey: context.callKey });
    return `E-mail sent to ${to} (message ${sent.id}).`;
  },
});
