/**
 * Media job callbacks (beyond the gateway spec): a video or music job created with a `callback_url` is POSTed to it
 * once when it ends, as the Standard Webhooks specification (standardwebhooks.com) signs a message:
 *
 * - The body is the job as `GET /api/v1/media/{video|music}/{id}` shows it (activities/media/job-view.ts) plus
 *   `event`: `media.job.completed`, `media.job.failed` or `media.job.cancelled`.
 * - `webhook-id: msg_<job id>` (the same on every attempt: one job ends once, so a receiver dedupes by it),
 *   `webhook-timestamp: <unix seconds of this attempt>`, `webhook-signature: v1,<base64 HMAC-SHA256 of
 *   "<id>.<timestamp>.<body>">`, keyed by the account's secret (`whsec_<base64 of 32 random bytes>`; the HMAC key is
 *   the decoded bytes; activities/net/standard-webhooks.ts, the platform's one signing module). For 24 hours after a rotation the previous secret signs too (a second, space-separated
 *   `v1,…`), so receivers can switch secrets without losing a delivery. Any Standard Webhooks library verifies it.
 * - The secret is per account, created on first use (`CallbackSecrets.current`), shown to its owner by `GET
 *   /api/v1/media/callback-secret` and replaced by `POST /api/v1/media/callback-secret/rotate`.
 * - The POST goes through the platform's one URL guard (activities/net/url-guard.ts): http(s) only, public addresses
 *   only (FETCH_ALLOWED_HOSTS excepted, as for web_fetch), checked again at connection time, no redirects, a 10 s
 *   deadline. A 2xx answer delivers; anything else, or a network failure, throws so the workflow's retry policy tries
 *   again with backoff; a refused URL (a private address, say) is not retried. When the attempts run out the workflow
 *   records `callback_status: failed` (`callbackGaveUp`); the job itself keeps its status.
 * - Delivered once: the activity is keyed by the job id, reads the row first and sends nothing when the row already
 *   says `delivered` (a retried workflow task or a replayed activity after a worker crash sends no second copy);
 *   every attempt is counted on the row (`callback_attempts`, `callback_error`).
 */
import { ApplicationFailure } from '@temporalio/common';
import { run, type Pool } from '../../db/pool.ts';
import { newWebhookSecret, postSignedWebhook } from '../net/standard-webhooks.ts';
import { UrlRefusedError } from '../net/url-guard.ts';
import { asyncJobView, jobColumns, type MediaJobRow } from './job-view.ts';

/** How long after a rotation the previous secret still signs alongside the new one. */
export const rotationGraceMs = 24 * 60 * 60 * 1000;

export interface CallbackSecret {
  secret: string;
  /** Set for `rotationGraceMs` after a rotation: it signs too. */
  previousSecret?: string;
  rotatedAt?: Date;
  createdAt: Date;
}

type SecretRow = { secret: string; previous_secret: string | null; rotated_at: Date | null; created_at: Date };

const ensureSecret = {
  name: 'media-callback-secret-ensure',
  text: `insert into media_callback_secrets (user_id, secret, created_at) values ($1, $2, now())
         on conflict (user_id) do nothing`,
};

const selectSecret = {
  name: 'media-callback-secret-select',
  text: `select secret, previous_secret, rotated_at, created_at from media_callback_secrets where user_id = $1`,
};

const rotateSecret = {
  name: 'media-callback-secret-rotate',
  text: `insert into media_callback_secrets (user_id, secret, created_at) values ($1, $2, now())
         on conflict (user_id) do update set previous_secret = media_callback_secrets.secret, secret = excluded.secret,
           rotated_at = now()
         returning secret, previous_secret, rotated_at, created_at`,
};

function secretOf(row: SecretRow): CallbackSecret {
  const inGrace = row.rotated_at !== null && Date.now() - row.rotated_at.getTime() < rotationGraceMs;
  return {
    secret: row.secret,
    ...(inGrace && row.previous_secret ? { previousSecret: row.previous_secret } : {}),
    ...(row.rotated_at ? { rotatedAt: row.rotated_at } : {}),
    createdAt: row.created_at,
  };
}

/** Each account's signing secret: created on first use, rotated on request. */
export class CallbackSecrets {
  private readonly pool: Pool;

  constructor(pool: Pool) {
    this.pool = pool;
  }

  /** The account's secret, created now if it had none (two first uses at once agree on one). */
  async current(userId: string): Promise<CallbackSecret> {
    await run(this.pool, ensureSecret, [userId, newWebhookSecret()]);
    const [row] = await run<SecretRow>(this.pool, selectSecret, [userId]);
    return secretOf(row!);
  }

  /** A new secret; the old one keeps signing alongside for `rotationGraceMs`. */
  async rotate(userId: string): Promise<CallbackSecret> {
    const [row] = await run<SecretRow>(this.pool, rotateSecret, [userId, newWebhookSecret()]);
    return secretOf(row!);
  }
}

export const callbackEvents = {
  completed: 'media.job.completed',
  failed: 'media.job.failed',
  cancelled: 'media.job.cancelled',
} as const;

const selectForCallback = {
  name: 'media-callback-select',
  text: `select ${jobColumns}, user_id from media_jobs where id = $1`,
};

const countAttempt = {
  name: 'media-callback-attempt',
  text: `update media_jobs set callback_attempts = callback_attempts + 1, callback_status = 'pending' where id = $1
         and callback_status is distinct from 'delivered'`,
};

const attemptFailed = {
  name: 'media-callback-attempt-failed',
  text: `update media_jobs set callback_error = $2 where id = $1`,
};

const markDelivered = {
  name: 'media-callback-delivered',
  text: `update media_jobs set callback_status = 'delivered', callback_delivered_at = now(), callback_error = null
         where id = $1`,
};

const markGaveUp = {
  name: 'media-callback-gave-up',
  text: `update media_jobs set callback_status = 'failed', callback_error = coalesce($2, callback_error) where id = $1
         and callback_status is distinct from 'delivered'`,
};

export interface CallbackActivityDependencies {
  pool: Pool;
  /** Hosts the guard lets through although not public (FETCH_ALLOWED_HOSTS: tests and local receivers). */
  toolSettings: { fetchAllowedHosts: string[] };
}

export function createCallbackActivities({ pool, toolSettings }: CallbackActivityDependencies) {
  const secrets = new CallbackSecrets(pool);
  return {
    /**
     * POSTs the ended job to its callback URL, signed; answers what happened. Throws (for the retry policy) when the
     * receiver answered other than 2xx or could not be reached.
     */
    async deliverMediaJobCallback(jobId: string): Promise<'delivered' | 'already delivered' | 'no callback'> {
      const [row] = await run<MediaJobRow & { user_id: string }>(pool, selectForCallback, [jobId]);
      if (!row?.callback_url) return 'no callback';
      if (row.callback_status === 'delivered') return 'already delivered';
      const event = callbackEvents[row.status as keyof typeof callbackEvents];
      if (event === undefined) {
        throw ApplicationFailure.nonRetryable(`job ${jobId} has not ended (${row.status})`, 'CallbackRefused');
      }
      const body = JSON.stringify({ event, ...asyncJobView(row, false) });
      const id = `msg_${row.id}`;
      const { secret, previousSecret } = await secrets.current(row.user_id);
      await run(pool, countAttempt, [jobId]);
      let status: number;
      try {
        status = await postSignedWebhook({
          url: row.callback_url,
          id,
          body,
          secrets: [secret, ...(previousSecret ? [previousSecret] : [])],
          allowedHosts: toolSettings.fetchAllowedHosts,
        });
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        await run(pool, attemptFailed, [jobId, message]);
        // A URL the guard refuses will be refused on every attempt.
        if (error instanceof UrlRefusedError) throw ApplicationFailure.nonRetryable(message, 'CallbackRefused');
        throw error;
      }
      if (status < 200 || status > 299) {
        const message = `the receiver answered ${status}`;
        await run(pool, attemptFailed, [jobId, message]);
        throw ApplicationFailure.retryable(message, 'CallbackRejected');
      }
      await run(pool, markDelivered, [jobId]);
      return 'delivered';
    },

    /** Records that the callback will not be delivered (the attempts ran out or the URL was refused). */
    async mediaJobCallbackGaveUp(jobId: string, error: string): Promise<void> {
      await run(pool, markGaveUp, [jobId, error]);
    },
  };
}

export type CallbackActivities = ReturnType<typeof createCallbackActivities>;
