/**
 * A session's conversation, whole for its owner (`GET /export/{session_id}`) and read-only for anyone holding a share
 * link (`POST /share/{session_id}`, `GET /s/{token}`). Plain SQL on the `pg` pool.
 *
 * A share link is 32 random bytes (base64url), shown once; only its SHA-256 is stored (`conversation_shares`), so the
 * table alone opens nothing. It shows the conversation as it was when the link was made (messages up to the newest
 * one then), and stops working when revoked, past its expiry, or when the session is deleted: each is a 404, like a
 * token never issued.
 *
 * What a shared conversation shows (`sharedView`): the user's and the assistant's messages, with their times and the
 * answering agent, and for an answer that used tools only the tools' names. Never shown: tool arguments and results
 * (a web_fetch of a private URL, a mail read, a SQL result: whatever a tool saw may be private), any other session,
 * memories, the owner's account or e-mail address, the channel a message came through. E-mail addresses written in
 * the messages themselves are masked too (a public page is no place for anyone's address). The export is the
 * owner's own and keeps everything.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { ConversationStore } from '../../../activities/conversations/conversation-store.ts';
import { sessionTitleLength } from '../../../activities/conversations/conversation-store.ts';
import type { ToolCall } from '../../../common/chat.ts';
import { run, type Pool } from '../../../db/pool.ts';
import { newId } from '../apikeys/service.ts';
import type { UsageService } from '../usage/service.ts';
import type {
  ExportedConversation,
  ExportedMessage,
  SharedConversation,
  SharedMessage,
} from '../../agents/routes/sharing/schema.ts';

const statements = {
  /**
   * The messages of a branch in order (`$3`, the branch's turns; null: the branch the conversation is on now), up to a
   * message id (null: all).
   */
  messages: {
    name: 'sharing-messages',
    text: `select id, turn, seq, role, content, tool_calls, tool_call_id, tool_name, agent_id, channel, created_at
           from chat_messages
           where conversation_id = $1 and ($2::bigint is null or id <= $2::bigint)
             and turn <@ coalesce($3::int4multirange, (select head_path from chat_conversations where id = $1))
           order by turn, seq`,
  },
  /** The turns of the branch the conversation is on. */
  turns: {
    name: 'sharing-turns',
    text: `select id, number, status, agent_id, created_at, finished_at from chat_turns
           where conversation_id = $1 and number <@ (select head_path from chat_conversations where id = $1)
           order by number`,
  },
  /** The branch the conversation is on, its newest message and its message count. */
  newestMessage: {
    name: 'sharing-newest-message',
    text: `select coalesce(max(m.id), 0) as id, count(m.id) as count, c.head_path
           from chat_conversations c left join chat_messages m on m.conversation_id = c.id and m.turn <@ c.head_path
           where c.id = $1 group by c.head_path`,
  },
  create: {
    name: 'sharing-create',
    text: `insert into conversation_shares (id, token_hash, owner, session_id, last_message_id, turns, created_at,
                                            expires_at)
           values ($1, $2, $3, $4, $5, $6, now(), $7) returning created_at`,
  },
  revoke: {
    name: 'sharing-revoke',
    text: `update conversation_shares set revoked_at = now()
           where session_id = $1 and owner = $2 and revoked_at is null and (expires_at is null or expires_at > now())`,
  },
  /** A live link and its session (still the owner's): revoked, expired or orphaned links find nothing. */
  resolve: {
    name: 'sharing-resolve',
    text: `select sh.last_message_id, sh.turns, sh.created_at, sh.expires_at, s.conversation_id
           from conversation_shares sh join chat_sessions s on s.id = sh.session_id and s.owner = sh.owner
           where sh.token_hash = $1 and sh.revoked_at is null and (sh.expires_at is null or sh.expires_at > now())`,
  },
} as const;

interface MessageRow {
  id: string;
  turn: number;
  seq: number;
  role: 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls: ToolCall[] | null;
  tool_call_id: string | null;
  tool_name: string | null;
  agent_id: string | null;
  channel: string;
  created_at: Date;
}

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** E-mail addresses in shared text (RFC 5322's common form: enough to keep addresses off a public page). */
const emailAddress =
  /[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)+/g;
export const maskedEmail = '[e-mail address hidden]';
export const maskEmails = (text: string) => text.replace(emailAddress, maskedEmail);

/** The first user message, whitespace collapsed and cut, as `GET /sessions` titles a session. */
function titleOf(messages: Array<{ role: string; content: string | null }>): string | null {
  const first = messages.find((message) => message.role === 'user' && message.content?.trim());
  return first ? first.content!.trim().replace(/\s+/g, ' ').slice(0, sessionTitleLength) : null;
}

export interface CreatedShare {
  shareId: string;
  token: string;
  messageCount: number;
  createdAt: Date;
  expiresAt: Date | null;
}

export class SharingService {
  private readonly pool: Pool;
  private readonly conversations: ConversationStore;
  private readonly usage: UsageService;

  constructor(dependencies: { pool: Pool; conversations: ConversationStore; usage: UsageService }) {
    this.pool = dependencies.pool;
    this.conversations = dependencies.conversations;
    this.usage = dependencies.usage;
  }

  /**
   * The owner's session as its JSON export (every message, tool call and turn with its cost, of the branch the
   * conversation is on; the usage is the whole session's, alternatives included), or null.
   */
  async transcript(owner: string, key: string): Promise<ExportedConversation | null> {
    const session = await this.conversations.findSession(owner, key);
    if (!session) return null;
    const [rows, turns, turnUsage, usage, created] = await Promise.all([
      run<MessageRow>(this.pool, statements.messages, [session.conversationId, null, null]),
      run<{
        id: string;
        number: number;
        status: 'running' | 'done' | 'failed';
        agent_id: string | null;
        created_at: Date;
        finished_at: Date | null;
      }>(this.pool, statements.turns, [session.conversationId]),
      this.usage.forTurns(session.conversationId),
      this.usage.forSession(owner, key),
      this.pool.query<{ created_at: Date }>('select created_at from chat_sessions where id = $1', [session.sessionId]),
    ]);
    const messages = rows.map(exportedMessage);
    return {
      format: 'tessera.conversation.v1',
      session_id: session.key,
      title: titleOf(messages),
      channels: [...new Set([session.channel, ...messages.map((message) => message.channel)])].sort(),
      created_at: new Date(created.rows[0]!.created_at).toISOString(),
      exported_at: new Date().toISOString(),
      messages,
      turns: turns.map((turn) => {
        const spent = turnUsage.get(turn.id);
        return {
          turn: turn.number,
          status: turn.status,
          agent_id: turn.agent_id,
          started_at: new Date(turn.created_at).toISOString(),
          finished_at: turn.finished_at ? new Date(turn.finished_at).toISOString() : null,
          input_tokens: spent?.input_tokens ?? 0,
          output_tokens: spent?.output_tokens ?? 0,
          credits: spent?.credits ?? 0,
          cost_usd: spent?.cost_usd ?? 0,
          models: spent?.models ?? [],
        };
      }),
      usage: {
        turns: usage?.turns ?? 0,
        input_tokens: usage?.input_tokens ?? 0,
        output_tokens: usage?.output_tokens ?? 0,
        credits: usage?.credits ?? 0,
        cost_usd: usage?.cost_usd ?? 0,
      },
    };
  }

  /** A new link to the owner's session as it is now, or null when the owner has no such session. */
  async share(owner: string, key: string, expiresInSeconds: number | undefined): Promise<CreatedShare | null> {
    const session = await this.conversations.findSession(owner, key);
    if (!session) return null;
    const [newest] = await run<{ id: string; count: string; head_path: string }>(this.pool, statements.newestMessage, [
      session.conversationId,
    ]);
    const token = randomBytes(32).toString('base64url');
    const shareId = newId('shr');
    const expiresAt = expiresInSeconds === undefined ? null : new Date(Date.now() + expiresInSeconds * 1000);
    const [created] = await run<{ created_at: Date }>(this.pool, statements.create, [
      shareId,
      hashToken(token),
      owner,
      session.sessionId,
      newest?.id ?? 0,
      newest?.head_path ?? null,
      expiresAt,
    ]);
    return {
      shareId,
      token,
      messageCount: Number(newest?.count ?? 0),
      createdAt: new Date(created!.created_at),
      expiresAt,
    };
  }

  /** Revokes every live link to the owner's session: how many; null when the owner has no such session. */
  async revoke(owner: string, key: string): Promise<number | null> {
    const session = await this.conversations.findSession(owner, key);
    if (!session) return null;
    const result = await this.pool.query({ ...statements.revoke, values: [session.sessionId, owner] });
    return result.rowCount ?? 0;
  }

  /** What a live link shows (see the file comment), or null for any token that opens nothing. */
  async shared(token: string): Promise<SharedConversation | null> {
    const [link] = await run<{
      last_message_id: string;
      turns: string | null;
      created_at: Date;
      expires_at: Date | null;
      conversation_id: string;
    }>(this.pool, statements.resolve, [hashToken(token)]);
    if (!link) return null;
    const rows = await run<MessageRow>(this.pool, statements.messages, [
      link.conversation_id,
      link.last_message_id,
      link.turns,
    ]);
    const messages = rows.flatMap(sharedMessage);
    const title = titleOf(messages);
    return {
      title,
      shared_at: new Date(link.created_at).toISOString(),
      expires_at: link.expires_at ? new Date(link.expires_at).toISOString() : null,
      messages,
    };
  }
}

function exportedMessage(row: MessageRow): ExportedMessage {
  return {
    turn: row.turn,
    seq: row.seq,
    role: row.role,
    content: row.content,
    channel: row.channel,
    created_at: new Date(row.created_at).toISOString(),
    ...(row.agent_id ? { agent_id: row.agent_id } : {}),
    ...(row.tool_calls?.length
      ? {
          tool_calls: row.tool_calls.map((call) => ({
            id: call.id,
            name: call.function.name,
            arguments: call.function.arguments,
          })),
        }
      : {}),
    ...(row.tool_call_id ? { tool_call_id: row.tool_call_id } : {}),
    ...(row.tool_name ? { tool_name: row.tool_name } : {}),
  };
}

/** A message as a share link shows it: tool results dropped, tool calls reduced to their names, addresses masked. */
function sharedMessage(row: MessageRow): SharedMessage[] {
  if (row.role === 'tool') return [];
  const tools = [...new Set((row.tool_calls ?? []).map((call) => call.function.name))];
  if (row.role === 'assistant' && !row.content?.trim() && tools.length === 0) return [];
  return [
    {
      role: row.role,
      content: row.content === null ? null : maskEmails(row.content),
      created_at: new Date(row.created_at).toISOString(),
      ...(row.role === 'assistant' && row.agent_id ? { agent_id: row.agent_id } : {}),
      ...(tools.length ? { tools_used: tools } : {}),
    },
  ];
}
