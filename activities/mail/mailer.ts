/**
 * Outgoing mail: magic links (api/services/logins/magic-links.ts) and, through `ToolServices['mail']`, tools that
 * send mail. One transport per process: SMTP through nodemailer when `SMTP_URL` is set, else a logging mailer that
 * writes each mail to the process log on one line (`npm start` says so in its banner), so a local install can log
 * in without a mail server.
 *
 * Once per idempotency key: a send first claims its key in `sent_mails` (insert … on conflict do nothing), then
 * hands the mail to the transport with a Message-ID chosen before the send, then marks the row sent. A second send
 * with the key of a sent mail answers the first one's id without sending. A send that failed deletes its claim, so
 * a retry sends; a claim left by a process that died mid-send is taken over after `staleClaimMs` (the one window
 * where a mail may go out twice: the transport accepted it but the process died before recording it). While
 * another send of the key is in flight, the call fails (retryable), never sends beside it.
 */
import { randomUUID } from 'node:crypto';
import type { Transporter } from 'nodemailer';
import type { Pool } from '../../db/pool.ts';

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  /** The same key sends once (e.g. `magic-link:<token hash>`, or a tool call's key). */
  idempotencyKey: string;
}

/** The shape `ToolServices['mail']` (activities/tools/tool.ts) wants, and what logins use. */
export interface Mailer {
  /** `smtp` when SMTP_URL is set, else `log`. */
  readonly transport: 'smtp' | 'log';
  send(mail: OutgoingMail): Promise<{ id: string }>;
  close(): void;
}

/** A claim older than this, still unsent, belonged to a process that died mid-send: it may be taken over. */
const staleClaimMs = 2 * 60_000;

export class MailInFlightError extends Error {
  constructor(key: string) {
    super(`a mail with idempotency key ${key} is being sent; retry later`);
    this.name = 'MailInFlightError';
  }
}

export function createMailer(options: {
  pool: Pool;
  smtpUrl: string | undefined;
  from: string;
  /** Where the logging mailer writes (and SMTP failures are reported). */
  log: (line: string) => void;
}): Mailer {
  const { pool, from, log } = options;
  const { smtpUrl } = options;
  // nodemailer is imported at the first mail, not at the process's start (issue 29).
  let transporter: Promise<Transporter> | null = null;
  const smtp = (url: string) =>
    (transporter ??= import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport(url)));
  const transport = smtpUrl ? 'smtp' : 'log';
  const domain = /@([^>\s]+)>?\s*$/.exec(from)?.[1] ?? 'tessera.local';

  const deliver = async (mail: OutgoingMail, messageId: string) => {
    if (!smtpUrl) {
      const text = mail.text.replace(/\s*\n\s*/g, ' | ');
      log(`[mail] no SMTP_URL, so this mail is logged instead of sent: to ${mail.to}, "${mail.subject}": ${text}`);
      return;
    }
    await (await smtp(smtpUrl)).sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text, messageId });
  };

  return {
    transport,
    async send(mail) {
      const messageId = `<${randomUUID()}@${domain}>`;
      const claimed = await pool.query<{ message_id: string }>(
        `insert into sent_mails (idempotency_key, message_id, recipient, subject, transport, claimed_at, sent_at)
         values ($1, $2, $3, $4, $5, now(), null)
         on conflict (idempotency_key) do update
           set message_id = excluded.message_id, recipient = excluded.recipient, subject = excluded.subject,
               transport = excluded.transport, claimed_at = now()
           where sent_mails.sent_at is null and sent_mails.claimed_at < now() - make_interval(secs => $6)
         returning message_id`,
        [mail.idempotencyKey, messageId, mail.to, mail.subject, transport, staleClaimMs / 1000],
      );
      if (claimed.rowCount === 0) {
        const { rows } = await pool.query<{ message_id: string; sent_at: Date | null }>(
          'select message_id, sent_at from sent_mails where idempotency_key = $1',
          [mail.idempotencyKey],
        );
        if (rows[0]?.sent_at) return { id: rows[0].message_id };
        throw new MailInFlightError(mail.idempotencyKey);
      }
      try {
        await deliver(mail, messageId);
      } catch (error) {
        await pool
          .query('delete from sent_mails where idempotency_key = $1 and message_id = $2 and sent_at is null', [
            mail.idempotencyKey,
            messageId,
          ])
          .catch(() => undefined);
        throw error;
      }
      await pool.query('update sent_mails set sent_at = now() where idempotency_key = $1 and message_id = $2', [
        mail.idempotencyKey,
        messageId,
      ]);
      return { id: messageId };
    },
    close() {
      void transporter?.then((opened) => opened.close());
    },
  };
}
