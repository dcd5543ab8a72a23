/**
 * Gmail messages both ways: the fields the model reads out of the API's `Message` resource (headers, the text of the
 * body, attachments), and the RFC 2822 message the draft and send tools hand Gmail (`raw`, base64url), composed by
 * nodemailer's MailComposer (header encoding, line folding, UTF-8 bodies), as a reply when asked: the original's
 * thread, `In-Reply-To` and `References`.
 */
import MailComposer from 'nodemailer/lib/mail-composer';
import { z } from 'zod';
import type { GoogleWorkspaceService } from '../../google/google-api.ts';
import { plainText } from '../search/engine.ts';
import { resourceId, segment } from './workspace-tool.ts';

export interface GmailHeader {
  name: string;
  value: string;
}

export interface GmailPart {
  partId?: string;
  mimeType?: string;
  filename?: string;
  headers?: GmailHeader[];
  body?: { size?: number; data?: string; attachmentId?: string };
  parts?: GmailPart[];
}

export interface GmailMessage {
  id: string;
  threadId?: string;
  labelIds?: string[];
  snippet?: string;
  internalDate?: string;
  payload?: GmailPart;
}

export function header(message: GmailMessage, name: string): string | undefined {
  return message.payload?.headers?.find((item) => item.name.toLowerCase() === name.toLowerCase())?.value;
}

/** The short form search answers. */
export function summary(message: GmailMessage) {
  return {
    id: message.id,
    thread_id: message.threadId,
    from: header(message, 'From'),
    to: header(message, 'To'),
    subject: header(message, 'Subject') ?? '',
    date: header(message, 'Date') ?? dateOf(message),
    snippet: message.snippet ?? '',
    unread: message.labelIds?.includes('UNREAD') ?? false,
  };
}

function dateOf(message: GmailMessage): string | undefined {
  return message.internalDate ? new Date(Number(message.internalDate)).toISOString() : undefined;
}

/** The body as text: the text/plain parts, else the text/html ones made plain. */
export function bodyText(payload: GmailPart | undefined): string {
  const plain: string[] = [];
  const html: string[] = [];
  const walk = (part: GmailPart) => {
    if (part.filename) return;
    const data = part.body?.data;
    if (data && part.mimeType === 'text/plain') plain.push(decode(data));
    else if (data && part.mimeType === 'text/html') html.push(plainText(decode(data)));
    for (const child of part.parts ?? []) walk(child);
  };
  if (payload) walk(payload);
  return (plain.length ? plain : html).join('\n\n').trim();
}

export function attachments(
  payload: GmailPart | undefined,
): Array<{ filename: string; mime_type: string; bytes: number }> {
  const found: Array<{ filename: string; mime_type: string; bytes: number }> = [];
  const walk = (part: GmailPart) => {
    if (part.filename) {
      found.push({ filename: part.filename, mime_type: part.mimeType ?? '', bytes: part.body?.size ?? 0 });
    }
    for (const child of part.parts ?? []) walk(child);
  };
  if (payload) walk(payload);
  return found;
}

const decode = (data: string) => Buffer.from(data, 'base64url').toString('utf8');

/** The fields of a message to draft or send. */
export const outgoingMessage = {
  to: z.array(z.email().max(254)).min(1).max(50).describe('Recipients’ e-mail addresses'),
  cc: z.array(z.email().max(254)).max(50).optional().describe('Copy recipients'),
  subject: z.string().trim().min(1).max(500),
  body: z.string().min(1).max(50_000).describe('The plain-text body'),
  reply_to_message_id: resourceId('The id of a message this replies to (gmail_search answers ids)').optional(),
};

export interface OutgoingMessage {
  to: string[];
  cc?: string[] | undefined;
  subject: string;
  body: string;
  reply_to_message_id?: string | undefined;
}

/** The message as Gmail takes it (`{raw, threadId?}`), a reply threaded under its original. */
export async function composeMessage(
  google: GoogleWorkspaceService,
  userId: string,
  message: OutgoingMessage,
  signal: AbortSignal,
): Promise<{ raw: string; threadId?: string }> {
  let reply: { threadId?: string; messageId?: string; references?: string } = {};
  if (message.reply_to_message_id) {
    const original = (
      await google.request(
        userId,
        {
          family: 'gmail',
          path: `/users/me/messages/${segment(message.reply_to_message_id)}`,
          query: { format: 'metadata', metadataHeaders: ['Message-ID', 'References'] },
        },
        signal,
      )
    ).json as GmailMessage;
    const messageId = header(original, 'Message-ID');
    reply = {
      ...(original.threadId ? { threadId: original.threadId } : {}),
      ...(messageId ? { messageId } : {}),
      references: [header(original, 'References'), messageId].filter(Boolean).join(' '),
    };
  }
  const bytes = await new MailComposer({
    to: message.to,
    ...(message.cc?.length ? { cc: message.cc } : {}),
    subject: message.subject,
    text: message.body,
    textEncoding: 'base64',
    ...(reply.messageId ? { inReplyTo: reply.messageId, references: reply.references } : {}),
  })
    .compile()
    .build();
  return { raw: bytes.toString('base64url'), ...(reply.threadId ? { threadId: reply.threadId } : {}) };
}
