/**
 * Standard Webhooks (standardwebhooks.com), the platform's one signing scheme for webhooks, both ways, on the
 * specification's own library (`standardwebhooks`):
 *
 * - Outgoing (media job callbacks, activities/media/callbacks.ts; automation run callbacks,
 *   api/services/webhooks/activities.ts): `postSignedWebhook` POSTs a JSON body with `webhook-id`,
 *   `webhook-timestamp` (unix seconds of this attempt) and `webhook-signature: v1,<base64 HMAC-SHA256 of
 *   "<id>.<timestamp>.<body>">`, one `v1,…` per secret (space-separated: the current one and, during a rotation's
 *   grace, the previous one), through the platform's one URL guard.
 * - Incoming (`POST /webhook/{agent_id}`, api/agents/routes/webhooks/): `verifyStandardWebhook` checks a delivery
 *   against the webhook's secrets (current, then previous during its grace), and refuses a timestamp more than
 *   `webhookToleranceSeconds` from now either way (the library's window), so a captured delivery cannot be replayed
 *   later; a replay inside the window is the same `webhook-id`, which the receiver deduplicates.
 *
 * Secrets are `whsec_<base64 of 32 random bytes>`; the HMAC key is the decoded bytes.
 */
import { randomBytes } from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { guardedFetch } from './url-guard.ts';

/** How far a delivery's `webhook-timestamp` may be from now, either way (the library's own tolerance). */
export const webhookToleranceSeconds = 5 * 60;

export const webhookSecretPrefix = 'whsec_';

export function newWebhookSecret(): string {
  return `${webhookSecretPrefix}${randomBytes(32).toString('base64')}`;
}

/** The `webhook-signature` header of one message: a `v1,<base64>` per secret, space-separated. */
export function webhookSignature(secrets: string[], id: string, timestampSeconds: number, body: string): string {
  const at = new Date(timestampSeconds * 1000);
  return secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' ');
}

/** The three Standard Webhooks headers of one message signed now. */
export function signedWebhookHeaders(secrets: string[], id: string, body: string): Record<string, string> {
  const timestamp = Math.floor(Date.now() / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': webhookSignature(secrets, id, timestamp, body),
  };
}

export type WebhookVerification = { ok: true; id: string } | { ok: false; reason: string };

/**
 * Whether `body` carries a valid signature by one of `secrets` with a timestamp inside the window. The reason of a
 * refusal names what was wrong (missing headers, a stale or future timestamp, no matching signature), never a secret.
 */
export function verifyStandardWebhook(
  secrets: string[],
  body: Buffer,
  headers: { id: string; timestamp: string; signature: string },
): WebhookVerification {
  if (!headers.id || !headers.timestamp || !headers.signature) {
    return { ok: false, reason: 'webhook-id, webhook-timestamp and webhook-signature are all required' };
  }
  const sent = {
    'webhook-id': headers.id,
    'webhook-timestamp': headers.timestamp,
    'webhook-signature': headers.signature,
  };
  let reason = 'no signature in webhook-signature matches the body';
  for (const secret of secrets) {
    try {
      new Webhook(secret).verify(body, sent, { jsonParse: false });
      return { ok: true, id: headers.id };
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
      if (/timestamp/i.test(error.message)) {
        return {
          ok: false,
          reason: `webhook-timestamp is not within ${webhookToleranceSeconds / 60} minutes of now (${error.message})`,
        };
      }
      if (error.message !== 'No matching signature found') reason = error.message;
    }
  }
  return { ok: false, reason };
}

/**
 * POSTs `body` (JSON) to `url`, signed with `secrets`, through the URL guard (http(s), public addresses unless
 * allowed, no redirects, 10 s): the receiver's status. Throws the guard's errors (a refused URL is UrlRefusedError)
 * and network failures, for the caller's retry policy.
 */
export async function postSignedWebhook(options: {
  url: string;
  id: string;
  body: string;
  secrets: string[];
  allowedHosts: string[];
}): Promise<number> {
  const { status } = await guardedFetch(options.url, {
    method: 'POST',
    body: options.body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'Tessera-Webhooks/1',
      ...signedWebhookHeaders(options.secrets, options.id, options.body),
    },
    allowedHosts: options.allowedHosts,
    timeoutMs: 10_000,
    maxBytes: 1024 * 1024,
  });
  return status;
}
