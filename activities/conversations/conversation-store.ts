/**
 * The one conversation store, for the gateway's session chat, the agent service and the messaging apps: sessions
 * (what a client or a chat app names a conversation), conversations (the history linked sessions share), numbered
 * turns, and messages tagged with their channel. Plain SQL on the `pg` pool; every write is idempotent, so a
 * retried activity changes nothing twice.
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';
import type { ChatMessage as OpenAIMessage, ToolCall } from '../../common/chat.ts';
import { chatTurnWorkflowId, type ChatTurnEvent } from '../../common/chat-turn.ts';
import { messageSearchConfig } from '../../db/entities/chat-message.entity.ts';
import type { PoolClient } from 'pg';
import { retryingDeadlocks, run, transaction, type Pool, type Queryable } from '../../db/pool.ts';
import { storableJson, storableText } from '../../common/text.ts';
import type { MessengerPlatform, MessengerTarget } from '../../common/messengers.ts';

export interface SessionRef {
  sessionId: string;
  conversationId: string;
  key: string;
  channel: string;
}

export interface AcceptedTurn {
  turnId: string;
  turn: number;
  previousTurnId: string | null;
  /**
   * The previous turn had ended when this one was accepted (or there is none): its messages are stored, and this
   * turn's history can be read at once, without waiting for it.
   */
  previousEnded: boolean;
}

/** A turn as its opening left it: the session it came through, and its number in the conversation. */
export type OpenedTurn = SessionRef & AcceptedTurn;

/** What a turn's opening writes (`openTurn`). */
export interface TurnOpening {
  owner: string;
  key: string;
  channel: string;
  /** The session, when the caller holds it already (a messaging app's chat): otherwise found or created by key. */
  session?: SessionRef;
  /** The agent that answers (the agent service's turns; null: the gateway's chat, or routed inside the turn). */
  agentId: string | null;
  /** The user's message: the turn's first message (position 0). */
  message: string;
  /**
   * The turn this one stands in for (its number): a regenerated answer or an edited message follows that turn's parent,
   * as its alternative, and the conversation moves to the new branch. Absent: the turn follows the conversation's branch.
   */
  replaces?: number;
  /**
   * The uploaded images the message carries (`image_file_ids`, or `image_file_id`), in order, stored with the turn: a
   * turn standing in for this one attaches them again, and the history names them. An image sent inline
   * (`image_data`) is not stored.
   */
  imageFileIds?: string[];
}

/** A turn, as the writes of its steps name it. */
export interface TurnTarget {
  turnId: string;
  conversationId: string;
  sessionId: string;
  channel: string;
  turn: number;
}

/** What closing a turn writes (ConversationStore.closeTurn): its messages from `firstSeq`, its status, its last events. */
export interface TurnClose {
  messages: StoredMessage[];
  firstSeq: number;
  status: 'done' | 'failed';
  /** Writes the turn's last events to the stream journal on the close's transaction. */
  journal: (client: PoolClient) => Promise<void>;
}

export interface StoredMessage {
  role: 'user' | 'assistant' | 'tool';
  content: string | null;
  toolCalls?: ToolCall[];
  toolCallId?: string;
  toolName?: string;
  /** The agent that wrote an assistant message (the agent service's chat). */
  agentId?: string;
}

export interface SessionSummary {
  key: string;
  /** The session's own key while it is not linked; the unified key (its conversation's id) once it is. */
  resolved_key: string;
  channels: string[];
  message_count: number;
  last_activity: string | null;
  created_at: string;
}

/** One message as a history page shows it (`GET /history/{session_id}`). */
export interface HistoryMessage {
  role: string;
  content: string | null;
  channel: string;
  agent_id?: string;
  tool_name?: string;
  created_at: string;
  /** This message's position: pass it as `before` for the messages older than it. */
  cursor: string;
}

export interface HistoryPage {
  key: string;
  /** Oldest first: the newest `limit` messages before the cursor. */
  messages: HistoryMessage[];
  /** Every message of the branch the session's conversation is on. */
  message_count: number;
  /** The page's turns: their agents, costs and alternatives. */
  turns: TurnView[];
  /** The cursor of the page's oldest message when older ones exist, else null. */
  next_before: string | null;
}

/** A turn as a transcript shows it beside its messages (`GET /history/{session_id}`'s `turns`). */
export interface TurnView {
  turn_id: string;
  number: number;
  status: string;
  /** The agent that answered, how sure the router was and how it chose, and the model (the agent service's turns). */
  agent?: { id: string; name: string; confidence: number; method: string; model: string };
  /** What the turn cost, once it ended; `stopped` when a person stopped it. */
  cost?: {
    credits: number;
    cost_usd: number;
    input_tokens: number;
    output_tokens: number;
    model: string;
    stopped?: boolean;
  };
  /** Why the turn failed. */
  error?: string;
  /** The turns that stand at this place of the conversation (this one included), oldest first. */
  alternatives: string[];
  /**
   * The uploaded images the turn's message carried (`image_file_ids`), in order: those still the owner's (a file since
   * deleted is left out, its name gone with it; an image sent inline is not stored).
   */
  attachments: TurnAttachment[];
  /** The first of `attachments`, or null (the field from when a message carried one image). */
  attachment: TurnAttachment | null;
}

/** An uploaded file a turn's message carried, as the history names it. */
export interface TurnAttachment {
  file_id: string;
  file_name: string;
  content_type: string;
}

/** A session as `GET /sessions` lists it. */
export interface SessionOverview {
  key: string;
  /** The conversation's first user message, whitespace collapsed, cut to `sessionTitleLength` characters. */
  title: string | null;
  channels: string[];
  message_count: number;
  /** The last message's time, else the session's creation time. */
  last_activity: string;
  created_at: string;
}

export interface MessageSearchHit {
  key: string;
  role: string;
  channel: string;
  snippet: string;
  created_at: string;
  rank: number;
}

export interface SessionView {
  key: string;
  resolved_key: string;
  messages: Array<{ role: string; content: string | null; channel: string; created_at: string }>;
  message_count: number;
}

/** `GET /sessions` titles: the first user message cut to this many characters. */
export const sessionTitleLength = 80;

/**
 * A history cursor names a message's position in its conversation, `<turn>.<seq>`. Linking renumbers the joining
 * conversation's turns, so a cursor taken before a link may point elsewhere after it.
 */
export const historyCursorPattern = /^(\d{1,9})\.(\d{1,9})$/;

/** Search snippets mark the matched words with these (not HTML tags: message content is not HTML-escaped). */
export const searchMarkers = { start: '«', stop: '»' } as const;

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('base64url')}`;

/** The channels of messaging apps: their sessions are made by the webhooks, never by an API client. */
export const messengerChannels = ['line', 'telegram', 'slack'];

/** How long a link code lives (spec 4.9 leaves it open; the issue says 10 minutes). */
export const linkCodeLifetimeMs = 10 * 60_000;

/** Session ids that may be linked by sending them to a bot: those carrying a UUID (see `linkableSession`). */
export const linkableKeyPattern = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

const hashCode = (code: string) => createHash('sha256').update(`tessera-link-code:${code}`).digest('hex');

/** Which owner a linked conversation passes to: a user's account, else a guest's, else a messaging app chat's. */
export function ownerRank(owner: string): number {
  if (owner.startsWith('user:')) return 3;
  if (owner === 'guest') return 2;
  return 1;
}

const statements = {
  findSession: {
    name: 'chat-find-session',
    text: 'select id, conversation_id, key, channel from chat_sessions where owner = $1 and key = $2',
  },
  /** A new session with its conversation, in one statement; no row back when a concurrent one took the key. */
  createSession: {
    name: 'chat-create-session',
    text: `with conversation as (
             insert into chat_conversations (id, owner, turns, created_at, updated_at) values ($5, $2, 0, now(), now())
           )
           insert into chat_sessions (id, owner, key, channel, conversation_id, created_at, updated_at)
           values ($1, $2, $3, $4, $5, now(), now())
           on conflict (owner, key) do nothing returning id`,
  },
  /**
   * Numbers the conversation's next turn and records it as running (turns are answered in this order), naming the
   * agent that answers (the agent service's turns), and stores the turn's user message at position 0 (and touches the
   * session), in one statement. The turn follows the conversation's branch (`head_path`), or, standing in for turn
   * `$6` (a regenerated answer, an edited message), that turn's parent: the new turn's branch becomes the
   * conversation's. `$7`: the uploaded images the message carries (`image_file_ids`, in order; empty: none).
   */
  acceptTurnWithMessage: {
    name: 'chat-accept-turn-with-message',
    text: `with conversation as (
             update chat_conversations c set turns = c.turns + 1, updated_at = now(),
               head_path = coalesce(
                 (select r.path - int4multirange(int4range(r.number, r.number + 1)) from chat_turns r
                  where r.conversation_id = $1 and r.number = $6::int),
                 c.head_path) + int4multirange(int4range(c.turns + 1, c.turns + 2))
             where c.id = $1 returning c.turns, c.head_path
           ), turn as (
             insert into chat_turns (id, conversation_id, number, status, created_at, agent_id, parent, path,
                                     image_file_ids)
             select 'chat-' || $1 || '-' || turns, $1, turns, 'running', now(), $2,
                    upper(head_path - int4multirange(int4range(turns, turns + 1))) - 1, head_path, $7::text[]
             from conversation
             returning number
           ), message as (
             insert into chat_messages (conversation_id, session_id, turn, seq, role, content, channel, created_at)
             select $1, $3, number, 0, 'user', $4, $5, now() from turn
             on conflict (conversation_id, turn, seq) do nothing
           ), session as (
             update chat_sessions set updated_at = now() where id = $3
           )
           select number, (select status from chat_turns where id = 'chat-' || $1 || '-' || (turn.number - 1))
                          as previous_status
           from turn`,
  },
  /** Ends a running turn; its agent when it was running (so a retried finish reports the turn once). */
  finishTurn: {
    name: 'chat-finish-turn',
    text: `update chat_turns set status = $2, finished_at = now(), approval_expires_at = null
           where id = $1 and status = 'running' returning agent_id`,
  },
  /** The agent a turn routed inside its workflow went to (its metrics and webhook runs name it). */
  setTurnAgent: {
    name: 'chat-set-turn-agent',
    text: `update chat_turns set agent_id = $2 where id = $1`,
  },
  markApproval: {
    name: 'chat-mark-approval',
    text: `update chat_turns set approval_expires_at = $2 where id = $1 and status = 'running'`,
  },
  approvalsWaiting: {
    name: 'chat-approvals-waiting',
    text: `select count(*) as waiting from chat_turns where approval_expires_at > now()`,
  },
  turnStatus: {
    name: 'chat-turn-status',
    text: 'select status, created_at from chat_turns where id = $1',
  },
  /** A turn's messages in one statement (arrays, one element per message), and the session's activity time. */
  appendMessages: {
    name: 'chat-append-messages',
    text: `with added as (
             insert into chat_messages (conversation_id, session_id, turn, seq, role, content, tool_calls, tool_call_id,
                                        tool_name, agent_id, channel, created_at)
             select $1::text, $2::text, $3::int, $4::int + m.ordinality::int - 1, m.role, m.content, m.tool_calls::jsonb,
                    m.tool_call_id, m.tool_name, m.agent_id, $5::text, now()
             from unnest($6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])
                  with ordinality as m(role, content, tool_calls, tool_call_id, tool_name, agent_id)
             on conflict (conversation_id, turn, seq) do nothing
           )
           update chat_sessions set updated_at = now() where id = $2::text`,
  },
  /**
   * A page of the messages of the branch the conversation is on, newest first, before a position (`$2`, `$3`; null:
   * from the end), with the branch's message count.
   */
  historyPage: {
    name: 'chat-history-page',
    text: `with branch as (select head_path from chat_conversations where id = $1)
           select turn, seq, role, content, channel, agent_id, tool_name, created_at,
                  (select count(*) from chat_messages, branch
                   where conversation_id = $1 and turn <@ branch.head_path) as total
           from chat_messages, branch
           where conversation_id = $1 and turn <@ branch.head_path
             and ($2::int is null or (turn, seq) < ($2::int, $3::int))
           order by turn desc, seq desc limit $4`,
  },
  /**
   * The owner's sessions, most recently active first, each with its conversation's message count, channels, last
   * message time and title: its own (`PATCH /sessions/{id}`), else its first user message. Both lateral reads use the
   * (conversation_id, turn, seq) index.
   */
  sessionOverviews: {
    name: 'chat-session-overviews',
    text: `select s.key, s.created_at, stats.message_count, stats.last_activity,
                  coalesce(stats.channels, array[s.channel]) as channels,
                  coalesce(s.title,
                    left(regexp_replace(btrim(first_user.content), '\\s+', ' ', 'g'), ${sessionTitleLength})) as title
           from chat_sessions s
           cross join lateral (
             select count(*) as message_count, max(m.created_at) as last_activity, array_agg(distinct m.channel) as channels
             from chat_messages m where m.conversation_id = s.conversation_id
           ) stats
           left join lateral (
             select m.content from chat_messages m
             where m.conversation_id = s.conversation_id and m.role = 'user' and btrim(coalesce(m.content, '')) <> ''
             order by m.turn, m.seq limit 1
           ) first_user on true
           where s.owner = $1
           order by coalesce(stats.last_activity, s.created_at) desc, s.key`,
  },
  /**
   * Full-text search over the user and assistant messages of every conversation the owner has a session in
   * (websearch_to_tsquery syntax: words AND-ed, "quoted phrases", \`or\`, \`-word\`), ranked by ts_rank_cd (cover
   * density: more of the query's terms, closer together, rank higher), newest first among equals. The total counts
   * every match; snippets are made for the page only. A hit names the owner's session its message came through, or
   * (a message from a linked messaging app's chat) the owner's oldest session of that conversation.
   */
  searchMessages: {
    name: 'chat-search-messages',
    text: `with query as (
             select websearch_to_tsquery('${messageSearchConfig}', $2) as q
           ), hits as (
             select m.id, m.conversation_id, m.session_id, m.role, m.channel, m.content, m.created_at,
                    ts_rank_cd(m.search_vector, query.q) as rank, count(*) over () as total
             from chat_messages m, query
             where m.conversation_id in (select conversation_id from chat_sessions where owner = $1)
               and m.role in ('user', 'assistant') and m.content is not null and m.search_vector @@ query.q
             order by rank desc, m.created_at desc, m.id desc
             limit $3
           )
           select (select s.key from chat_sessions s where s.conversation_id = hits.conversation_id and s.owner = $1
                   order by (s.id = hits.session_id) desc, s.created_at, s.key limit 1) as key,
                  hits.role, hits.channel, hits.created_at, hits.rank, hits.total,
                  ts_headline('${messageSearchConfig}', hits.content, query.q,
                              'StartSel=${searchMarkers.start}, StopSel=${searchMarkers.stop}, MaxWords=30, MinWords=10, MaxFragments=2, FragmentDelimiter=" … "') as snippet
           from hits, query
           order by hits.rank desc, hits.created_at desc, hits.id desc`,
  },
  /**
   * The messages of turn `$2`'s branch before it (`$3`: and its own), in order. A conversation that never branched
   * has one range in `path`, and this is every earlier turn, as before branches.
   */
  history: {
    name: 'chat-history',
    text: `select role, content, tool_calls, tool_call_id from chat_messages
           where conversation_id = $1 and (turn < $2 or ($3 and turn = $2))
             and turn <@ (select path from chat_turns where conversation_id = $1 and number = $2)
           order by turn, seq`,
  },
  /**
   * A turn of the owner's session's conversation: its number, status and stored images (regenerate, edit, a branch to
   * show).
   */
  sessionTurn: {
    name: 'chat-session-turn',
    text: `select t.conversation_id, t.number, t.status, t.image_file_ids from chat_sessions s
           join chat_turns t on t.conversation_id = s.conversation_id
           where s.owner = $1 and s.key = $2 and t.id = $3`,
  },
  /**
   * Puts the conversation on the branch through turn `$2`: its newest turn below it (the one made last, which no
   * other follows yet), or the turn itself. The branch's newest turn back.
   */
  switchBranch: {
    name: 'chat-switch-branch',
    text: `with leaf as (
             select number, path from chat_turns
             where conversation_id = $1 and path @> $2::int
             order by number desc limit 1
           )
           update chat_conversations c set head_path = leaf.path, updated_at = now() from leaf
           where c.id = $1 returning leaf.number`,
  },
  /**
   * The turns of the branch's turns `$2` as a transcript shows them: the agent and how it was chosen (the journal's
   * first event), the cost (its last, when it ended), its alternatives (the turns that follow the same parent), and the
   * uploaded images its message carried (in order) while those files are still `$3`'s (the user the history is read
   * for), as one JSON array.
   */
  turnViews: {
    name: 'chat-turn-views',
    text: `with shown as (
             select id, number, status, parent, image_file_ids from chat_turns
             where conversation_id = $1 and number = any($2::int[])
           ), siblings as (
             -- One pass over the conversation's turns for every place the page shows.
             select o.parent, array_agg(o.id order by o.number) as ids from chat_turns o
             where o.conversation_id = $1 and exists (select 1 from shown where shown.parent is not distinct from o.parent)
             group by o.parent
           )
           select t.id, t.number, t.status, siblings.ids as alternatives,
                  (select data from stream_chunks where request_id = t.id and seq = 0) as first_event,
                  (select data from stream_chunks where request_id = t.id and t.status <> 'running'
                   order by seq desc limit 1) as last_event,
                  (select coalesce(json_agg(json_build_object('file_id', u.id, 'file_name', u.file_name,
                                                              'content_type', u.content_type) order by f.place), '[]')
                   from unnest(t.image_file_ids) with ordinality as f(id, place)
                   join uploads u on u.id = f.id and u.user_id = $3) as attachments
           from shown t join siblings on siblings.parent is not distinct from t.parent
           order by t.number`,
  },
} as const;

export class ConversationStore {
  private readonly pool: Pool;

  constructor(pool: Pool) {
    this.pool = pool;
  }

  /** The owner's session with this key, created (with a conversation of its own) on first use. */
  async openSession(owner: string, key: string, channel: string, on: Queryable = this.pool): Promise<SessionRef> {
    const found = await this.findSession(owner, key, on);
    if (found) return found;
    const conversationId = newId('conv');
    const sessionId = newId('ses');
    const created = await run(on, statements.createSession, [sessionId, owner, key, channel, conversationId]);
    if (created.length === 0) {
      // A concurrent first message created it: use that one (the conversation made here stays empty).
      const raced = await this.findSession(owner, key, on);
      if (raced) return raced;
    }
    return { sessionId, conversationId, key, channel };
  }

  async findSession(owner: string, key: string, on: Queryable = this.pool): Promise<SessionRef | null> {
    const [row] = await run<{ id: string; conversation_id: string; key: string; channel: string }>(
      on,
      statements.findSession,
      [owner, key],
    );
    return row ? { sessionId: row.id, conversationId: row.conversation_id, key: row.key, channel: row.channel } : null;
  }

  /**
   * Opens a turn in one transaction: `before` (the caller's rate limits), the session (found, or created with its
   * conversation), the turn's number, the user's message, then `after` (the first call's credit hold, the turn's start
   * event in the journal). A throw anywhere rolls it all back: a refused message leaves nothing behind. One commit
   * where the separate statements took five to eight. Two messages opening turns of one account at once may deadlock
   * (the turn's row, the account's credits); PostgreSQL aborts one, and it is opened again (`steps` only write to the
   * database, on `client`).
   */
  async openTurn<T>(
    opening: TurnOpening,
    steps: {
      before?: (client: PoolClient) => Promise<void>;
      after: (client: PoolClient, opened: OpenedTurn) => Promise<T>;
    },
  ): Promise<{ opened: OpenedTurn; result: T }> {
    return retryingDeadlocks(this.pool, async (client) => {
      await steps.before?.(client);
      const session = opening.session ?? (await this.openSession(opening.owner, opening.key, opening.channel, client));
      // The turn numbered and its message stored in one statement (one round trip fewer per message).
      const [row] = await run<{ number: number; previous_status: string | null }>(
        client,
        statements.acceptTurnWithMessage,
        [
          session.conversationId,
          opening.agentId,
          session.sessionId,
          storableText(opening.message),
          session.channel,
          opening.replaces ?? null,
          opening.imageFileIds ?? [],
        ],
      );
      if (!row) throw new Error(`no conversation ${session.conversationId}`);
      const opened: OpenedTurn = { ...session, ...acceptedTurn(session.conversationId, row) };
      return { opened, result: await steps.after(client, opened) };
    });
  }

  /**
   * Closes a turn in one transaction: the messages it added (from position `firstSeq`), its status, and its last
   * events in the journal (`journal`, the caller's: the stream journal's own insert). `ended` as `finishTurn`.
   */
  async closeTurn(target: TurnTarget, close: TurnClose): Promise<{ ended: boolean; agentId: string | null }> {
    return transaction(this.pool, (client) => this.closeTurnOn(client, target, close));
  }

  /** `closeTurn`'s writes on `client`, in a transaction the caller runs (a model call's settlement's). */
  async closeTurnOn(
    client: PoolClient,
    target: TurnTarget,
    close: TurnClose,
  ): Promise<{ ended: boolean; agentId: string | null }> {
    if (close.messages.length) await this.appendMessages(target, close.messages, close.firstSeq, client);
    const ended = await this.finishTurn(target.turnId, close.status, client);
    await close.journal(client);
    return ended;
  }

  /**
   * Ends a running turn. `ended` is true only for the call that ended it (a retried finish finds it ended), with the
   * turn's agent (null for the gateway's session chat).
   */
  async finishTurn(
    turnId: string,
    status: 'done' | 'failed',
    on: Queryable = this.pool,
  ): Promise<{ ended: boolean; agentId: string | null }> {
    const [row] = await run<{ agent_id: string | null }>(on, statements.finishTurn, [turnId, status]);
    return { ended: row !== undefined, agentId: row?.agent_id ?? null };
  }

  /** Names the agent a turn was routed to inside its workflow (`on`: the routing step's transaction). */
  async setTurnAgent(turnId: string, agentId: string, on: Queryable = this.pool): Promise<void> {
    await run(on, statements.setTurnAgent, [turnId, agentId]);
  }

  /** Records that the running turn waits for a person's approval until `expiresAt`, or (null) no longer waits. */
  async markApproval(turnId: string, expiresAt: Date | null): Promise<void> {
    await run(this.pool, statements.markApproval, [turnId, expiresAt]);
  }

  /** Tool calls waiting for a person's approval now, across the platform (one per waiting turn). */
  async approvalsWaiting(): Promise<number> {
    const [row] = await run<{ waiting: string }>(this.pool, statements.approvalsWaiting, []);
    return Number(row?.waiting ?? 0);
  }

  /** The owner of the conversation a turn belongs to, or null when there is no such turn. */
  async ownerOfTurn(turnId: string): Promise<string | null> {
    const { rows } = await this.pool.query<{ owner: string }>(
      'select c.owner from chat_turns t join chat_conversations c on c.id = t.conversation_id where t.id = $1',
      [turnId],
    );
    return rows[0]?.owner ?? null;
  }

  /** The turn's status and age, or null when no such turn was recorded. */
  async turnStatus(turnId: string): Promise<{ status: string; ageMs: number } | null> {
    const [row] = await run<{ status: string; created_at: Date }>(this.pool, statements.turnStatus, [turnId]);
    return row ? { status: row.status, ageMs: Date.now() - new Date(row.created_at).getTime() } : null;
  }

  /** Stores a turn's messages from position `firstSeq` on (again: nothing changes). */
  async appendMessages(
    target: { conversationId: string; sessionId: string; turn: number; channel: string },
    messages: StoredMessage[],
    firstSeq: number,
    on: Queryable = this.pool,
  ): Promise<void> {
    await run(on, statements.appendMessages, [
      target.conversationId,
      target.sessionId,
      target.turn,
      firstSeq,
      target.channel,
      messages.map((message) => message.role),
      // A user's text was checked at the edge (common/text.ts); a model's answer, a tool's result and the arguments
      // a model wrote were not, and a NUL in them must not fail the write (the turn would retry it for ever).
      messages.map((message) => (message.content === null ? null : storableText(message.content))),
      messages.map((message) => (message.toolCalls?.length ? storableJson(message.toolCalls) : null)),
      messages.map((message) => message.toolCallId ?? null),
      messages.map((message) => (message.toolName ? storableText(message.toolName) : null)),
      messages.map((message) => message.agentId ?? null),
    ]);
  }

  /**
   * The messages of turn `turn`'s branch before it (`including`: and its own so far), in order, as a model reads them.
   */
  async history(
    conversationId: string,
    turn: number,
    on: Queryable = this.pool,
    including = false,
  ): Promise<OpenAIMessage[]> {
    const rows = await run<{
      role: 'user' | 'assistant' | 'tool';
      content: string | null;
      tool_calls: ToolCall[] | null;
      tool_call_id: string | null;
    }>(on, statements.history, [conversationId, turn, including]);
    return rows.map((row): OpenAIMessage => {
      if (row.role === 'assistant') {
        return {
          role: 'assistant',
          content: row.content,
          ...(row.tool_calls?.length ? { tool_calls: row.tool_calls } : {}),
        };
      }
      if (row.role === 'tool')
        return { role: 'tool', content: row.content ?? '', tool_call_id: row.tool_call_id ?? '' };
      return { role: 'user', content: row.content ?? '' };
    });
  }

  /** The owner's sessions, most recently active first. */
  async listSessions(owner: string): Promise<SessionSummary[]> {
    const { rows } = await this.pool.query<{
      key: string;
      conversation_id: string;
      linked: boolean;
      channels: string[];
      message_count: string;
      last_activity: Date | null;
      created_at: Date;
    }>(
      `select s.key, s.conversation_id, s.created_at,
              exists (select 1 from chat_sessions o where o.conversation_id = s.conversation_id and o.id <> s.id) as linked,
              coalesce(array_agg(distinct m.channel) filter (where m.channel is not null), array[s.channel]) as channels,
              count(m.id) as message_count, max(m.created_at) as last_activity
       from chat_sessions s left join chat_messages m on m.conversation_id = s.conversation_id
       where s.owner = $1
       group by s.id order by coalesce(max(m.created_at), s.created_at) desc`,
      [owner],
    );
    return rows.map((row) => ({
      key: row.key,
      resolved_key: row.linked ? row.conversation_id : row.key,
      channels: row.channels,
      message_count: Number(row.message_count),
      last_activity: row.last_activity ? new Date(row.last_activity).toISOString() : null,
      created_at: new Date(row.created_at).toISOString(),
    }));
  }

  /**
   * A page of the owner's session's history (every linked channel's messages, tool results included): the newest
   * `limit` messages before the cursor `before` (a message's `cursor`; none: the newest), oldest first. Null when the
   * owner has no session with this key.
   */
  async historyPage(
    owner: string,
    key: string,
    page: { limit: number; before?: { turn: number; seq: number } },
  ): Promise<HistoryPage | null> {
    const ref = await this.findSession(owner, key);
    if (!ref) return null;
    // One row more than the page tells whether older messages exist.
    const rows = await run<{
      turn: number;
      seq: number;
      role: string;
      content: string | null;
      channel: string;
      agent_id: string | null;
      tool_name: string | null;
      created_at: Date;
      total: string;
    }>(this.pool, statements.historyPage, [
      ref.conversationId,
      page.before?.turn ?? null,
      page.before?.seq ?? null,
      page.limit + 1,
    ]);
    const shown = rows.slice(0, page.limit).reverse();
    const total = rows[0]
      ? Number(rows[0].total)
      : Number(
          (
            await this.pool.query<{ count: string }>(
              `select count(*) from chat_messages
               where conversation_id = $1 and turn <@ (select head_path from chat_conversations where id = $1)`,
              [ref.conversationId],
            )
          ).rows[0]!.count,
        );
    const cursorOf = (row: { turn: number; seq: number }) => `${row.turn}.${row.seq}`;
    const turns = await this.turnViews(ref.conversationId, [...new Set(shown.map((row) => row.turn))], owner);
    return {
      key: ref.key,
      messages: shown.map((row) => ({
        role: row.role,
        content: row.content,
        channel: row.channel,
        ...(row.agent_id ? { agent_id: row.agent_id } : {}),
        ...(row.tool_name ? { tool_name: row.tool_name } : {}),
        created_at: new Date(row.created_at).toISOString(),
        cursor: cursorOf(row),
      })),
      message_count: total,
      turns,
      next_before: rows.length > page.limit && shown[0] ? cursorOf(shown[0]) : null,
    };
  }

  /** The owner's sessions with a title and their activity, most recently active first. */
  async sessionOverviews(owner: string): Promise<SessionOverview[]> {
    const rows = await run<{
      key: string;
      created_at: Date;
      message_count: string;
      last_activity: Date | null;
      channels: string[];
      title: string | null;
    }>(this.pool, statements.sessionOverviews, [owner]);
    return rows.map((row) => ({
      key: row.key,
      title: row.title,
      channels: row.channels,
      message_count: Number(row.message_count),
      last_activity: new Date(row.last_activity ?? row.created_at).toISOString(),
      created_at: new Date(row.created_at).toISOString(),
    }));
  }

  /**
   * A turn of the owner's session (by its id): its conversation, number, status and the uploaded images its message
   * carried (in order; empty: none stored); null when it is not one.
   */
  async sessionTurn(
    owner: string,
    key: string,
    turnId: string,
  ): Promise<{ conversationId: string; number: number; status: string; imageFileIds: string[] } | null> {
    const [row] = await run<{ conversation_id: string; number: number; status: string; image_file_ids: string[] }>(
      this.pool,
      statements.sessionTurn,
      [owner, key, turnId],
    );
    return row
      ? {
          conversationId: row.conversation_id,
          number: row.number,
          status: row.status,
          imageFileIds: row.image_file_ids,
        }
      : null;
  }

  /**
   * Puts the owner's session's conversation on the branch through `turnId` (its newest turn below it): what every
   * linked session shows and continues from. The branch's newest turn's id; null when the turn is not the session's.
   */
  async switchBranch(owner: string, key: string, turnId: string): Promise<string | null> {
    const turn = await this.sessionTurn(owner, key, turnId);
    if (!turn) return null;
    const [row] = await run<{ number: number }>(this.pool, statements.switchBranch, [turn.conversationId, turn.number]);
    return row ? chatTurnWorkflowId(turn.conversationId, row.number) : null;
  }

  /**
   * How the transcript shows the branch's turns `numbers` of the owner's session: each turn's agent and how it was
   * chosen, its cost once it ended (from the turn's stream journal, which lives as long as the turn), its
   * alternatives in the order they were made, and the uploaded images its message carried, in order: those still the
   * owner's (`owner`, a `user:<id>`) are named, a deleted one is left out (its name went with it); `attachment` is the
   * first of them, or null.
   */
  async turnViews(conversationId: string, numbers: number[], owner: string): Promise<TurnView[]> {
    if (!numbers.length) return [];
    const rows = await run<{
      id: string;
      number: number;
      status: string;
      alternatives: string[];
      first_event: string | null;
      last_event: string | null;
      attachments: TurnAttachment[];
    }>(this.pool, statements.turnViews, [
      conversationId,
      numbers,
      owner.startsWith('user:') ? owner.slice('user:'.length) : null,
    ]);
    return rows.map((row) => {
      const first = parseEvent(row.first_event);
      const last = parseEvent(row.last_event);
      const start = first?.type === 'turn-start' ? first : null;
      const done = last?.type === 'turn-done' ? last : null;
      return {
        turn_id: row.id,
        number: row.number,
        status: row.status,
        ...(start?.agent
          ? {
              agent: {
                id: start.agent.id,
                name: start.agent.name,
                confidence: start.agent.confidence,
                method: start.agent.method,
                model: start.model,
              },
            }
          : {}),
        ...(done
          ? {
              cost: {
                credits: done.credits,
                cost_usd: done.costUsd ?? 0,
                input_tokens: done.usage.prompt_tokens,
                output_tokens: done.usage.completion_tokens,
                model: done.model,
                ...(done.stop === 'cancelled' ? { stopped: true } : {}),
              },
            }
          : {}),
        ...(last?.type === 'turn-error' ? { error: last.message } : {}),
        alternatives: row.alternatives,
        attachments: row.attachments,
        attachment: row.attachments[0] ?? null,
      };
    });
  }

  /** Sets a session's own title, or with null clears it (lists show the first message again); false: no such session. */
  async renameSession(owner: string, key: string, title: string | null): Promise<boolean> {
    const result = await this.pool.query(
      'update chat_sessions set title = $3, updated_at = now() where owner = $1 and key = $2',
      [owner, key, title],
    );
    return (result.rowCount ?? 0) > 0;
  }

  /** The owner's user and assistant messages matching a web-search style query, best first (see the statement). */
  async searchMessages(
    owner: string,
    query: string,
    limit: number,
  ): Promise<{ results: MessageSearchHit[]; total: number }> {
    const rows = await run<{
      key: string;
      role: string;
      channel: string;
      created_at: Date;
      rank: number;
      total: string;
      snippet: string;
    }>(this.pool, statements.searchMessages, [owner, query, limit]);
    return {
      results: rows.map((row) => ({
        key: row.key,
        role: row.role,
        channel: row.channel,
        snippet: row.snippet,
        created_at: new Date(row.created_at).toISOString(),
        rank: row.rank,
      })),
      total: rows[0] ? Number(rows[0].total) : 0,
    };
  }

  /** One session with the history of its conversation's branch (every linked channel's messages), or null. */
  async session(owner: string, key: string): Promise<SessionView | null> {
    const ref = await this.findSession(owner, key);
    if (!ref) return null;
    const { rows } = await this.pool.query<{ role: string; content: string | null; channel: string; created_at: Date }>(
      `select role, content, channel, created_at from chat_messages
       where conversation_id = $1 and turn <@ (select head_path from chat_conversations where id = $1)
       order by turn, seq`,
      [ref.conversationId],
    );
    const linked = await this.pool.query(
      'select 1 from chat_sessions where conversation_id = $1 and id <> $2 limit 1',
      [ref.conversationId, ref.sessionId],
    );
    return {
      key: ref.key,
      resolved_key: linked.rowCount ? ref.conversationId : ref.key,
      messages: rows.map((row) => ({
        role: row.role,
        content: row.content,
        channel: row.channel,
        created_at: new Date(row.created_at).toISOString(),
      })),
      message_count: rows.length,
    };
  }

  /**
   * Deletes a session for good, with the messages that came through it. When no other session shares its
   * conversation, the conversation goes too, with its turns and their stream journal. A conversation with a turn
   * still running is left alone (`busy`): the turn would write into what was deleted.
   */
  async deleteSession(
    owner: string,
    key: string,
  ): Promise<{ conversationId: string; conversationDeleted: boolean } | 'busy' | null> {
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      const { rows } = await client.query<{ id: string; conversation_id: string }>(
        'delete from chat_sessions where owner = $1 and key = $2 returning id, conversation_id',
        [owner, key],
      );
      const deleted = rows[0];
      if (!deleted) {
        await client.query('rollback');
        return null;
      }
      // Locks the conversation so no turn is accepted meanwhile (a turn's acceptance updates this row).
      await client.query('select 1 from chat_conversations where id = $1 for update', [deleted.conversation_id]);
      const running = await client.query(
        `select 1 from chat_turns where conversation_id = $1 and status = 'running' limit 1`,
        [deleted.conversation_id],
      );
      if (running.rowCount) {
        await client.query('rollback');
        return 'busy';
      }
      const others = await client.query('select 1 from chat_sessions where conversation_id = $1 limit 1', [
        deleted.conversation_id,
      ]);
      const conversationDeleted = others.rowCount === 0;
      if (conversationDeleted) {
        await client.query(
          `delete from stream_chunks where request_id in (select id from chat_turns where conversation_id = $1)`,
          [deleted.conversation_id],
        );
        await client.query('delete from chat_messages where conversation_id = $1', [deleted.conversation_id]);
        await client.query('delete from chat_turns where conversation_id = $1', [deleted.conversation_id]);
        await client.query('delete from chat_conversations where id = $1', [deleted.conversation_id]);
      } else {
        await client.query(
          `delete from stream_chunks where request_id in
             (select t.id from chat_turns t where t.conversation_id = $2
                and t.number in (select distinct turn from chat_messages where session_id = $1))`,
          [deleted.id, deleted.conversation_id],
        );
        await client.query('delete from chat_messages where session_id = $1', [deleted.id]);
        // The conversation passes to the highest-ranked owner left (a user, else a guest, else a messaging app).
        const owners = await client.query<{ owner: string }>(
          'select distinct owner from chat_sessions where conversation_id = $1',
          [deleted.conversation_id],
        );
        const owner = owners.rows.map((row) => row.owner).sort((a, b) => ownerRank(b) - ownerRank(a))[0];
        if (owner) {
          await client.query('update chat_conversations set owner = $2 where id = $1', [
            deleted.conversation_id,
            owner,
          ]);
        }
      }
      await client.query('commit');
      return { conversationId: deleted.conversation_id, conversationDeleted };
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** A session by its row id (the webhooks and link codes refer to sessions so). */
  async sessionById(sessionId: string): Promise<(SessionRef & { owner: string }) | null> {
    const { rows } = await this.pool.query<{
      id: string;
      owner: string;
      conversation_id: string;
      key: string;
      channel: string;
    }>('select id, owner, conversation_id, key, channel from chat_sessions where id = $1', [sessionId]);
    const row = rows[0];
    return row
      ? { sessionId: row.id, owner: row.owner, conversationId: row.conversation_id, key: row.key, channel: row.channel }
      : null;
  }

  /** Who a conversation belongs to (and is billed to): `user:<id>`, `guest`, or a messaging app's chat. */
  async conversationOwner(conversationId: string): Promise<string | null> {
    const { rows } = await this.pool.query<{ owner: string }>('select owner from chat_conversations where id = $1', [
      conversationId,
    ]);
    return rows[0]?.owner ?? null;
  }

  /**
   * The messaging app chats linked to the owner's conversations: every LINE, Telegram or Slack session in a
   * conversation the owner holds (a chat's key is `<platform>:<chat id>`, api/gateway/routes/webhooks/inbound.ts; a
   * Slack channel's `slack:<channel id>`, api/services/webhooks/slack-events.ts). What `/auth/me`
   * reports as `linked_apps`, and where team broadcasts and scheduled runs reach an account's chats.
   */
  async linkedChats(owner: string): Promise<MessengerTarget[]> {
    const { rows } = await this.pool.query<{ channel: MessengerPlatform; key: string }>(
      `select distinct s.channel, s.key from chat_sessions s join chat_conversations c on c.id = s.conversation_id
       where c.owner = $1 and s.channel = any($2::text[]) order by s.channel, s.key`,
      [owner, messengerChannels],
    );
    return rows
      .filter((row) => row.key.startsWith(`${row.channel}:`))
      .map((row) => ({ platform: row.channel, to: row.key.slice(row.channel.length + 1) }));
  }

  /**
   * The one web or API session with this key, for linking by session id (spec 4.9, ways 1 and 2). Only keys that
   * carry a UUID qualify (the web chat's `web:<uuid>`): a session id sent to a bot works like a password for its
   * history, so names anyone could guess (`api:default`) must link with a code instead. Null when none or several
   * owners use the key.
   */
  async linkableSession(key: string): Promise<(SessionRef & { owner: string }) | null> {
    if (!linkableKeyPattern.test(key)) return null;
    const { rows } = await this.pool.query<{ id: string }>(
      `select id from chat_sessions where key = $1 and channel <> all($2::text[]) limit 2`,
      [key, messengerChannels],
    );
    return rows.length === 1 ? this.sessionById(rows[0]!.id) : null;
  }

  /**
   * A new 6-digit link code for the session, valid `linkCodeLifetimeMs`; it replaces the session's previous one.
   * Codes are stored hashed and unique among live ones.
   */
  async createLinkCode(sessionId: string): Promise<{ code: string; expiresAt: Date }> {
    const expiresAt = new Date(Date.now() + linkCodeLifetimeMs);
    for (let tries = 0; ; tries++) {
      const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
      const client = await this.pool.connect();
      try {
        await client.query('begin');
        await client.query('delete from chat_link_codes where session_id = $1 or expires_at < now()', [sessionId]);
        const inserted = await client.query(
          `insert into chat_link_codes (code_hash, session_id, expires_at, created_at) values ($1, $2, $3, now())
           on conflict (code_hash) do nothing`,
          [hashCode(code), sessionId, expiresAt],
        );
        await client.query('commit');
        if (inserted.rowCount === 1) return { code, expiresAt };
      } catch (error) {
        await client.query('rollback').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
      // Another session holds this code right now: draw again.
      if (tries > 20) throw new Error('no free link code');
    }
  }

  /** Uses a link code up (once): the session that made it, or null when the code is unknown or expired. */
  async redeemLinkCode(code: string): Promise<(SessionRef & { owner: string }) | null> {
    const { rows } = await this.pool.query<{ session_id: string }>(
      'delete from chat_link_codes where code_hash = $1 and expires_at > now() returning session_id',
      [hashCode(code)],
    );
    return rows[0] ? this.sessionById(rows[0].session_id) : null;
  }

  /**
   * Links a session's conversation into another's, so both (and every session already linked to either) share
   * one history. The joining conversation's turns are renumbered after the target's and its messages moved with
   * them (the target's history first, then the joining one's); its row goes. The unified conversation belongs to
   * the higher-ranked owner (a user, else a guest, else a messaging app); two different users are never merged
   * (`foreign`). `busy` while either conversation has a turn running.
   */
  async linkConversations(
    joiningConversationId: string,
    targetConversationId: string,
  ): Promise<{ status: 'linked' | 'already' | 'busy' | 'foreign'; owner?: string }> {
    if (joiningConversationId === targetConversationId) return { status: 'already' };
    const client = await this.pool.connect();
    try {
      await client.query('begin');
      // Locked in id order, so two links racing the other way round cannot deadlock.
      const { rows } = await client.query<{ id: string; owner: string; turns: number; head_path: string }>(
        'select id, owner, turns, head_path from chat_conversations where id = any($1::text[]) order by id for update',
        [[joiningConversationId, targetConversationId]],
      );
      const joining = rows.find((row) => row.id === joiningConversationId);
      const target = rows.find((row) => row.id === targetConversationId);
      if (!joining || !target) throw new Error('a conversation to link does not exist');
      const running = await client.query(
        `select 1 from chat_turns where conversation_id = any($1::text[]) and status = 'running' limit 1`,
        [[joiningConversationId, targetConversationId]],
      );
      if (running.rowCount) {
        await client.query('rollback');
        return { status: 'busy' };
      }
      if (joining.owner !== target.owner && joining.owner.startsWith('user:') && target.owner.startsWith('user:')) {
        await client.query('rollback');
        return { status: 'foreign' };
      }
      const owner = ownerRank(joining.owner) > ownerRank(target.owner) ? joining.owner : target.owner;
      // The joining conversation's turns are numbered after the target's, and its tree hangs below the branch the target
      // is on: a first turn follows the target's newest turn on it, every other turn keeps its own parent (shifted), so
      // its branches and alternatives stay; each path is the target's branch and the turn's own path, shifted.
      const shift = target.turns;
      await client.query('update chat_messages set conversation_id = $2, turn = turn + $3 where conversation_id = $1', [
        joiningConversationId,
        targetConversationId,
        shift,
      ]);
      await client.query(
        `update chat_turns set conversation_id = $2, number = number + $3,
           parent = coalesce(parent + $3, upper($4::int4multirange) - 1),
           path = $4::int4multirange + ${shifted('path', '$3')}
         where conversation_id = $1`,
        [joiningConversationId, targetConversationId, shift, target.head_path],
      );
      // Share links keep showing what they showed: a joining session's turns are shifted, and a link made before
      // branches (no turns of its own: the conversation's branch) is pinned to its conversation's branch as it was.
      await client.query(
        `update conversation_shares sh
           set turns = case when s.conversation_id = $1
             then ${shifted('coalesce(sh.turns, $4::int4multirange)', '$3')}
             else $5::int4multirange end
         from chat_sessions s
         where s.id = sh.session_id and (s.conversation_id = $1 or (s.conversation_id = $2 and sh.turns is null))`,
        [joiningConversationId, targetConversationId, shift, joining.head_path, target.head_path],
      );
      await client.query(
        'update chat_sessions set conversation_id = $2, updated_at = now() where conversation_id = $1',
        [joiningConversationId, targetConversationId],
      );
      // The merged conversation is on the target's branch followed by the joining one's.
      await client.query(
        `update chat_conversations set owner = $2, turns = turns + $3, updated_at = now(),
           head_path = head_path + ${shifted('$4::int4multirange', '$5')}
         where id = $1`,
        [targetConversationId, owner, joining.turns, joining.head_path, shift],
      );
      await client.query('delete from chat_conversations where id = $1', [joiningConversationId]);
      await client.query('commit');
      return { status: 'linked', owner };
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }
}

/** SQL for the turn numbers of an int4multirange expression moved up by `by` (an SQL expression); empty stays empty. */
function shifted(multirange: string, by: string): string {
  return `coalesce((select range_agg(int4range(lower(r) + ${by}, upper(r) + ${by})) from unnest(${multirange}) r), '{}')`;
}

/** A journal event as stored (stream_chunks.data), or null. */
function parseEvent(data: string | null): ChatTurnEvent | null {
  if (!data) return null;
  try {
    return JSON.parse(data) as ChatTurnEvent;
  } catch {
    return null;
  }
}

/** The turn a conversation's row numbered (`acceptTurnWithMessage`), and whether the one before it has ended. */
function acceptedTurn(conversationId: string, row: { number: number; previous_status: string | null }): AcceptedTurn {
  return {
    turnId: chatTurnWorkflowId(conversationId, row.number),
    turn: row.number,
    previousTurnId: row.number > 1 ? chatTurnWorkflowId(conversationId, row.number - 1) : null,
    previousEnded: row.number === 1 || (row.previous_status !== null && row.previous_status !== 'running'),
  };
}
