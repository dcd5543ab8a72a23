/**
 * A real SMTP server (smtp-server) on loopback for one test file: the platform sends through it (SMTP_URL), and tests
 * read what arrived, e.g. the magic link of a login mail.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  from: string;
  to: string[];
  /** The raw message (headers and body, as sent). */
  raw: string;
  /** The body with quoted-printable soft breaks and escapes undone. */
  text: string;
}

export interface TestSmtp {
  url: string;
  received: ReceivedMail[];
  /** The next mail to `to` not yet taken (waits up to `timeoutMs`). */
  nextMail(to: string, timeoutMs?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

export function decodeQuotedPrintable(body: string): string {
  return body
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

export async function startTestSmtp(): Promise<TestSmtp> {
  const received: ReceivedMail[] = [];
  const taken = new Set<ReceivedMail>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const body = raw.slice(raw.indexOf('\r\n\r\n') + 4);
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((address) => address.address),
          raw,
          text: decodeQuotedPrintable(body),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    async nextMail(to, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const mail = received.find((candidate) => !taken.has(candidate) && candidate.to.includes(to));
        if (mail) {
          taken.add(mail);
          return mail;
        }
        if (Date.now() > deadline) throw new Error(`no mail to ${to} arrived`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
