/**
 * The activities of a team broadcast (workflows/team-broadcast.workflow.ts): one delivery per member, and the
 * broadcast's final status. A delivery is retried by the workflow, so every step of it is idempotent, keyed by
 * (broadcast, member) on its `team_broadcast_deliveries` row:
 *
 * 1. The member's session `team:<team id>` (owner `user:<member id>`, channel `team`) gets the message as an
 *    assistant-role message tagged channel `team`, as a turn of its own that is already done. Numbering the turn,
 *    storing the message and marking the row (`session_delivered_at`) is one transaction, so a retry after a crash
 *    either finds it all done or nothing done.
 * 2. Every LINE or Telegram chat linked to one of the member's conversations (the chats `/auth/me` counts as
 *    `linked_apps`) gets the message through the platform's client: LINE dedupes by retry key (derived from
 *    `team-broadcast:<broadcast>:<member>:<platform>:<chat>`), and for Telegram the parts already sent are counted
 *    on the row's `channels` entry and skipped. As with answers to messenger messages (messenger-activities.ts), a
 *    crash between Telegram accepting a part and the count being written can repeat that one part.
 * 3. A chat the platform refuses for good (a blocked bot, an unknown chat) is recorded with its error and the
 *    delivery ends `failed`; transient faults (5xx, 429, network) throw, and the workflow retries.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { ConversationStore } from '../conversations/conversation-store.ts';
import { MessengerRejection, splitMessage, type MessengerClient } from '../messengers/messenger.ts';
import type { MessengerPlatform } from '../../common/messengers.ts';
import type { Pool } from '../../db/pool.ts';

/** The channel tag of broadcast messages, and the prefix of each member's team session key. */
export const teamChannel = 'team';

export const teamSessionKey = (teamId: string) => `${teamChannel}:${teamId}`;

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One linked messaging app chat's part of a delivery, as stored in `team_broadcast_deliveries.channels`. */
export interface ChannelDelivery {
  platform: MessengerPlatform;
  to: string;
  /** Parts the message is sent in, and how many went out. */
  parts: number;
  sent: number;
  delivered_at?: string;
  error?: string;
}

export interface DeliveryOutcome {
  status: DeliveryStatus;
  error?: string;
}

/** How the message reads in a member's session and chats: the team, who sent it, and what. */
export function broadcastText(teamName: string, sender: string, message: string): string {
  return `[${teamName}] ${sender}: ${message}`;
}

export function createTeamActivities(dependencies: {
  pool: Pool;
  conversations: ConversationStore;
  messengers: Partial<Record<MessengerPlatform, MessengerClient>>;
}) {
  const { pool, conversations, messengers } = dependencies;

  /** Step 1: the message into the member's team session, once. */
  async function deliverToSession(broadcastId: string, userId: string, teamId: string, text: string): Promise<void> {
    const session = await conversations.openSession(`user:${userId}`, teamSessionKey(teamId), teamChannel);
    const client = await pool.connect();
    try {
      await client.query('begin');
      const { rows } = await client.query<{ session_delivered_at: Date | null }>(
        `select session_delivered_at from team_broadcast_deliveries where broadcast_id = $1 and user_id = $2
         for update`,
        [broadcastId, userId],
      );
      if (!rows[0]) throw ApplicationFailure.nonRetryable(`no delivery of ${broadcastId} to ${userId}`, 'NoDelivery');
      if (rows[0].session_delivered_at) {
        await client.query('commit');
        return;
      }
      // The conversation's own session may have been linked into another conversation meanwhile: read it afresh.
      const { rows: current } = await client.query<{ conversation_id: string }>(
        'select conversation_id from chat_sessions where id = $1',
        [session.sessionId],
      );
      const conversationId = current[0]?.conversation_id ?? session.conversationId;
      // A turn of its own on the conversation's branch (ConversationStore's turns: db/entities/chat-turn.entity.ts).
      const { rows: numbered } = await client.query<{ turns: number; head_path: string }>(
        `update chat_conversations set turns = turns + 1, updated_at = now(),
           head_path = head_path + int4multirange(int4range(turns + 1, turns + 2))
         where id = $1 returning turns, head_path`,
        [conversationId],
      );
      const turn = numbered[0]?.turns;
      if (turn === undefined) throw new Error(`conversation ${conversationId} disappeared`);
      await client.query(
        `insert into chat_turns (id, conversation_id, number, status, created_at, finished_at, parent, path)
         values ('chat-' || $1::text || '-' || $2::int, $1, $2, 'done', now(), now(),
                 upper($3::int4multirange - int4multirange(int4range($2, $2 + 1))) - 1, $3::int4multirange)`,
        [conversationId, turn, numbered[0]!.head_path],
      );
      await client.query(
        `insert into chat_messages (conversation_id, session_id, turn, seq, role, content, channel, created_at)
         values ($1, $2, $3, 0, 'assistant', $4, $5, now())`,
        [conversationId, session.sessionId, turn, text, teamChannel],
      );
      await client.query('update chat_sessions set updated_at = now() where id = $1', [session.sessionId]);
      await client.query(
        `update team_broadcast_deliveries set session_delivered_at = now() where broadcast_id = $1 and user_id = $2`,
        [broadcastId, userId],
      );
      await client.query('commit');
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  const saveChannels = (broadcastId: string, userId: string, channels: ChannelDelivery[]) =>
    pool.query('update team_broadcast_deliveries set channels = $3::jsonb where broadcast_id = $1 and user_id = $2', [
      broadcastId,
      userId,
      JSON.stringify(channels),
    ]);

  return {
    /** Delivers a broadcast to one member (steps 1–3 of the file comment); again: what is done is skipped. */
    async deliverTeamBroadcast(input: { broadcastId: string; userId: string }): Promise<DeliveryOutcome> {
      const { broadcastId, userId } = input;
      const { rows } = await pool.query<{
        team_id: string;
        team_name: string;
        message: string;
        sender: string;
        status: DeliveryStatus;
        error: string | null;
        channels: ChannelDelivery[];
      }>(
        `select b.team_id, t.name as team_name, b.message, coalesce(u.email, b.sender_id) as sender,
                d.status, d.error, d.channels
         from team_broadcast_deliveries d
         join team_broadcasts b on b.id = d.broadcast_id
         join teams t on t.id = b.team_id
         left join users u on u.id = b.sender_id
         where d.broadcast_id = $1 and d.user_id = $2`,
        [broadcastId, userId],
      );
      const row = rows[0];
      if (!row) throw ApplicationFailure.nonRetryable(`no delivery of ${broadcastId} to ${userId}`, 'NoDelivery');
      if (row.status !== 'pending') return { status: row.status, ...(row.error ? { error: row.error } : {}) };
      const text = broadcastText(row.team_name, row.sender, row.message);

      await deliverToSession(broadcastId, userId, row.team_id, text);

      const channels = [...row.channels];
      for (const chat of await conversations.linkedChats(`user:${userId}`)) {
        if (!channels.some((entry) => entry.platform === chat.platform && entry.to === chat.to)) {
          channels.push({ ...chat, parts: 0, sent: 0 });
        }
      }
      for (const entry of channels) {
        if (entry.delivered_at || entry.error) continue;
        const client = messengers[entry.platform];
        if (!client) {
          entry.error = `${entry.platform} is not configured here`;
          await saveChannels(broadcastId, userId, channels);
          continue;
        }
        const parts = splitMessage(text, client.maxMessageChars);
        entry.parts = parts.length;
        try {
          await client.send(
            entry.to,
            parts,
            entry.sent,
            `team-broadcast:${broadcastId}:${userId}:${entry.platform}:${entry.to}`,
            async (delivered) => {
              entry.sent = delivered;
              await saveChannels(broadcastId, userId, channels);
            },
          );
          entry.delivered_at = new Date().toISOString();
        } catch (error) {
          if (!(error instanceof MessengerRejection)) throw error;
          entry.error = error.message;
        }
        await saveChannels(broadcastId, userId, channels);
      }

      const errors = channels
        .filter((entry) => entry.error)
        .map((entry) => `${entry.platform} ${entry.to}: ${entry.error}`);
      const status: DeliveryStatus = errors.length ? 'failed' : 'delivered';
      const error = errors.length ? errors.join('; ') : null;
      await pool.query(
        `update team_broadcast_deliveries
         set status = $3::text, error = $4, channels = $5::jsonb,
             delivered_at = case when $3::text = 'delivered' then now() end
         where broadcast_id = $1 and user_id = $2 and status = 'pending'`,
        [broadcastId, userId, status, error, JSON.stringify(channels)],
      );
      return { status, ...(error ? { error } : {}) };
    },

    /** Records a delivery the workflow gave up on (its retries ran out): `failed`, with why. */
    async failTeamBroadcastDelivery(input: { broadcastId: string; userId: string; error: string }): Promise<void> {
      await pool.query(
        `update team_broadcast_deliveries set status = 'failed', error = $3
         where broadcast_id = $1 and user_id = $2 and status = 'pending'`,
        [input.broadcastId, input.userId, input.error],
      );
    },

    /**
     * Ends the broadcast: `delivered` when every member was reached, `failed` when none was, else `partial`. Once:
     * a finished broadcast keeps its status.
     */
    async finishTeamBroadcast(input: { broadcastId: string }): Promise<{ status: string }> {
      const { rows } = await pool.query<{ status: string }>(
        `with counts as (
           select count(*) filter (where status = 'delivered') as delivered, count(*) as total
           from team_broadcast_deliveries where broadcast_id = $1
         )
         update team_broadcasts b
         set status = case when counts.delivered = counts.total then 'delivered'
                           when counts.delivered = 0 then 'failed' else 'partial' end,
             finished_at = now()
         from counts where b.id = $1 and b.finished_at is null
         returning b.status`,
        [input.broadcastId],
      );
      if (rows[0]) return rows[0];
      const found = await pool.query<{ status: string }>('select status from team_broadcasts where id = $1', [
        input.broadcastId,
      ]);
      return { status: found.rows[0]?.status ?? 'failed' };
    },
  };
}
