/**
 * How a conversation reads outside the API: the owner's Markdown export, and the public page of a share link.
 *
 * Markdown (`GET /export/{session_id}?format=md`): a title, a line of totals, then each message under a heading
 * `### <Role> · <time>` (the answering agent in parentheses), its text verbatim (it is Markdown already: code blocks
 * stay code blocks), and each tool call summarised on a quoted line: the tool, its arguments and the start of its
 * result, each cut to `summaryLength` characters on one line.
 *
 * The page (`GET /s/{token}`): one HTML document, every piece of text escaped, no script and no outside resource; its
 * one style block is allowed by its hash in the Content-Security-Policy (api/agents/routes/sharing/routes.ts).
 */
import { createHash } from 'node:crypto';
import type { ExportedConversation, SharedConversation } from '../../agents/routes/sharing/schema.ts';

const summaryLength = 200;

const htmlEntities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
/** Text as HTML text or attribute value. */
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (character) => htmlEntities[character]!);

/** `2026-11-26 01:02:03 UTC` */
const readableTime = (iso: string) => `${iso.slice(0, 19).replace('T', ' ')} UTC`;

const roleName = { user: 'User', assistant: 'Assistant', tool: 'Tool' } as const;

/** Text on one line, cut to `summaryLength` characters. */
function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > summaryLength ? `${flat.slice(0, summaryLength - 1)}…` : flat;
}

/** Inline code that holds any text: a fence longer than the longest run of backticks in it. */
function inlineCode(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  const padded = text.startsWith('`') || text.endsWith('`') ? ` ${text} ` : text;
  return `${fence}${padded}${fence}`;
}

export function transcriptMarkdown(conversation: ExportedConversation): string {
  const { usage } = conversation;
  const lines: string[] = [
    `# ${conversation.title ?? 'Conversation'}`,
    '',
    `Session ${inlineCode(conversation.session_id)} · exported ${readableTime(conversation.exported_at)} · ` +
      `${usage.turns} turn${usage.turns === 1 ? '' : 's'} · ${usage.credits} credits · $${usage.cost_usd}`,
    '',
  ];
  const results = new Map(
    conversation.messages
      .filter((message) => message.role === 'tool' && message.tool_call_id)
      .map((message) => [message.tool_call_id!, message.content ?? '']),
  );
  for (const message of conversation.messages) {
    if (message.role === 'tool') continue;
    const agent = message.agent_id ? ` (${message.agent_id})` : '';
    lines.push(`### ${roleName[message.role]}${agent} · ${readableTime(message.created_at)}`, '');
    if (message.content !== null && message.content.trim() !== '') lines.push(message.content, '');
    for (const call of message.tool_calls ?? []) {
      const result = results.get(call.id);
      lines.push(
        `> **Tool call** ${inlineCode(call.name)} ${inlineCode(oneLine(call.arguments) || '{}')}` +
          (result === undefined ? ' (no result)' : ` → ${inlineCode(oneLine(result) || '(empty)')}`),
        '',
      );
    }
  }
  return `${lines.join('\n').trimEnd()}\n`;
}

const pageStyle =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}' +
  'h1{font-size:1.4rem}.meta{color:#666;font-size:.85rem}.message{border-top:1px solid #ddd;padding:.75rem 0}' +
  '.who{font-weight:600}.text{white-space:pre-wrap;overflow-wrap:anywhere}.tools{color:#555;font-size:.85rem}';

/** The page's style, as its CSP allows it: `'sha256-…'`. */
export const sharedPageStyleHash = `'sha256-${createHash('sha256').update(pageStyle).digest('base64')}'`;

export function sharedPage(conversation: SharedConversation): string {
  const title = conversation.title ?? 'Shared conversation';
  const expiry = conversation.expires_at ? ` · link expires ${readableTime(conversation.expires_at)}` : '';
  const messages = conversation.messages.map((message) => {
    const who = message.role === 'user' ? 'User' : `Assistant${message.agent_id ? ` (${message.agent_id})` : ''}`;
    const tools = message.tools_used?.length
      ? `<div class="tools">Used ${escapeHtml(message.tools_used.join(', '))}</div>`
      : '';
    const text = message.content ? `<div class="text">${escapeHtml(message.content)}</div>` : '';
    return (
      `<section class="message"><div class="who">${escapeHtml(who)} ` +
      `<span class="meta">${escapeHtml(readableTime(message.created_at))}</span></div>${text}${tools}</section>`
    );
  });
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="robots" content="noindex, nofollow">',
    '<meta name="referrer" content="no-referrer">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(title)}</title>`,
    `<style>${pageStyle}</style>`,
    '</head><body>',
    `<h1>${escapeHtml(title)}</h1>`,
    `<p class="meta">A read-only copy of a conversation, shared ${escapeHtml(readableTime(conversation.shared_at))}${escapeHtml(expiry)}.</p>`,
    ...messages,
    '</body></html>',
    '',
  ].join('\n');
}
