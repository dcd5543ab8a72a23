/**
 * Magic-link login (spec 4.3, 5): `POST /auth/register {email}` mails a link `<base>/auth/verify?token=…`;
 * `GET /auth/verify` uses it once and logs the browser in (web-sessions.ts), creating the account on first login.
 *
 * - Token: 32 random bytes (base64url). Only its SHA-256 is stored (`login_tokens`), so a database read cannot log
 *   anyone in. Lifetime 15 minutes (`magicLinkLifetimeMs`).
 * - Once: consuming is one `update … set consumed_at = now() where … consumed_at is null and expires_at > now()`,
 *   so two concurrent uses of one link cannot both win. Replayed, forged and expired tokens are all the same 400.
 * - No account enumeration: the request is answered the same whether or not an account has the address (the account
 *   is only created when the link is used). Mail-bombing is bounded per address (`magicLinkLimits`, a 429 past it;
 *   the limit is counted for any address, so it reveals nothing either).
 * - The mail is sent with idempotency key `magic-link:<token hash>` (activities/mail/mailer.ts).
 * - Addresses are compared lower-cased and trimmed (common/email.ts), as everywhere an account is found by address.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Mailer } from '../../../activities/mail/mailer.ts';
import { normalizeEmail } from '../../../common/email.ts';
import type { Pool } from '../../../db/pool.ts';
import type { Subject } from '../../rate-limit.ts';

export const magicLinkLifetimeMs = 15 * 60_000;
/** Login mails per address. */
export const magicLinkLimits = { per_hour: 5, per_day: 20 };

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** The rate-limit subject of login mails to one address. */
export function magicLinkSubject(email: string): Subject {
  return {
    key: `magic-link:${normalizeEmail(email)}`,
    limits: magicLinkLimits,
    scope: 'login e-mails to this address',
  };
}

export class MagicLinks {
  private readonly pool: Pool;
  private readonly mailer: Mailer;
  private readonly productName: string;

  constructor(options: { pool: Pool; mailer: Mailer; productName: string }) {
    this.pool = options.pool;
    this.mailer = options.mailer;
    this.productName = options.productName;
  }

  /** Makes a token for the address and mails its link, built on `baseUrl` (the service's public origin). */
  async send(email: string, baseUrl: string): Promise<void> {
    const address = normalizeEmail(email);
    const token = randomBytes(32).toString('base64url');
    const tokenHash = hashToken(token);
    const expiresAt = new Date(Date.now() + magicLinkLifetimeMs);
    await this.pool.query(
      `insert into login_tokens (token_hash, email, expires_at, consumed_at, created_at) values ($1, $2, $3, null, now())`,
      [tokenHash, address, expiresAt],
    );
    // Tokens nobody used are of no further use; sweep them now and then, in passing.
    if (Math.random() < 0.05) {
      await this.pool.query(`delete from login_tokens where expires_at < now() - interval '1 day'`);
    }
    const link = new URL('/auth/verify', baseUrl);
    link.searchParams.set('token', token);
    const minutes = magicLinkLifetimeMs / 60_000;
    await this.mailer.send({
      to: address,
      subject: `Your ${this.productName} login link`,
      text: [
        'Hello,',
        '',
        `Open this link to log in to ${this.productName}:`,
        '',
        link.href,
        '',
        `It works once, within ${minutes} minutes. If you did not ask for it, ignore this mail: nobody can log in`,
        'without the link.',
      ].join('\n'),
      idempotencyKey: `magic-link:${tokenHash}`,
    });
  }

  /** Uses the token up: the address it was sent to, or null when it is unknown, used or expired. */
  async consume(token: string): Promise<string | null> {
    const { rows } = await this.pool.query<{ email: string }>(
      `update login_tokens set consumed_at = now()
       where token_hash = $1 and consumed_at is null and expires_at > now() returning email`,
      [hashToken(token)],
    );
    return rows[0]?.email ?? null;
  }
}
