/**
 * What happens to a message from a messaging app once its webhook has verified it (line.ts, telegram.ts): the
 * quick part, done before the webhook answers so nothing accepted is lost and the platform is answered in time.
 *
 * 1. Recorded in messenger_events under `<platform>:<event id>`: a redelivery of an event already started is
 *    acknowledged and dropped. One that is not started yet: younger than `inFlightMs`, another request is on it
 *    (acknowledged); older, that request died, so this one finishes the job from the stored input.
 * 2. The chat's session (`<platform>:<chat id>`, owned by that chat) is opened. Linking commands (linking.ts) and
 *    `/start` are answered without a model.
 * 3. Otherwise the message is a turn of the session's conversation, billed to the conversation's owner: a user's
 *    account once linked to one (their plan, limits and credits), else the guest plan with the guest row's limits
 *    counted per chat. A refusal (rate limit, credits, plan) becomes the reply.
 * 4. The `messengerMessage` workflow (`messenger-<platform>-<event id>`) is started with the prepared turn or
 *    reply: it runs the turn and sends the answer through the platform (workflows/messenger-message.workflow.ts).
 */
import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { WorkflowIdConflictPolicy, WorkflowIdReusePolicy } from '@temporalio/common';
import type { ConversationStore } from '../../../../activities/conversations/conversation-store.ts';
import type { MessengerPlatform } from '../../../../common/messengers.ts';
import { kindKey, userKey } from '../../../../common/search-attributes.ts';
import type { Pool } from '../../../../db/pool.ts';
import type { Logger } from '../../../../process/logger.ts';
import type { MessengerMessageInput, messengerMessage } from '../../../../workflows/messenger-message.workflow.ts';
import { ApiError } from '../../../errors.ts';
import type { RateLimits } from '../../../rate-limit.ts';
import type { ApiKeyService } from '../../../services/apikeys/service.ts';
import { parseLinkCommand, type Linking } from '../../../services/chat/linking.ts';
import type { ChatService, Chatter } from '../../../services/chat/service.ts';
import { textProblem } from '../../../../common/text.ts';

/** A message as the platforms' webhooks hand it on. */
export interface InboundMessage {
  platform: MessengerPlatform;
  /** The platform's id of the event (LINE's webhookEventId, Telegram's update_id). */
  eventId: string;
  /** Where answers go (LINE user/group/room id, Telegram chat id); also names the session. */
  chat: string;
  /** The text, or null for what the bot cannot read (stickers, photos). */
  text: string | null;
  /** The bot was added or started without a payload: greet. */
  greeting?: boolean;
}

/** An unstarted event younger than this is taken to be in the hands of another request. */
const inFlightMs = 60_000;
/**
 * Started events are kept this long to recognise redeliveries (LINE redelivers for up to a day, Telegram for about
 * as long), then swept hourly by each API process.
 */
const keepEventsMs = 7 * 24 * 3_600_000;
const sweepIntervalMs = 3_600_000;
/** Characters of a message the bot takes (the API's chat takes the same). */
const maxMessageChars = 32_000;

export class MessengerInbox {
  private readonly dependencies: {
    pool: Pool;
    client: Client;
    taskQueue: string;
    chat: ChatService;
    conversations: ConversationStore;
    linking: Linking;
    keys: ApiKeyService;
    limits: RateLimits | undefined;
    logger: Logger;
  };

  constructor(dependencies: MessengerInbox['dependencies']) {
    this.dependencies = dependencies;
    const sweeper = setInterval(() => {
      dependencies.pool
        .query('delete from messenger_events where started and created_at < $1', [new Date(Date.now() - keepEventsMs)])
        .catch((error: unknown) => dependencies.logger.warn({ err: error }, 'messenger event sweep failed'));
    }, sweepIntervalMs);
    sweeper.unref();
  }

  /** Takes one message: resolves once it is durably in hand (or known to be a duplicate). */
  async receive(message: InboundMessage): Promise<'started' | 'duplicate'> {
    const { pool } = this.dependencies;
    const eventId = `${message.platform}:${message.eventId}`;
    const inserted = await pool.query(
      `insert into messenger_events (id, started, replied_parts, created_at) values ($1, false, 0, now())
       on conflict (id) do nothing`,
      [eventId],
    );
    if (inserted.rowCount === 0) {
      const { rows } = await pool.query<{ started: boolean; input: MessengerMessageInput | null; age_ms: number }>(
        `select started, input, extract(epoch from now() - created_at) * 1000 as age_ms from messenger_events
         where id = $1`,
        [eventId],
      );
      const row = rows[0];
      if (!row || row.started || Number(row.age_ms) < inFlightMs) return 'duplicate';
      if (row.input) {
        await this.launch(row.input);
        return 'started';
      }
    }
    try {
      const input = await this.prepare(message, eventId);
      await pool.query('update messenger_events set input = $2 where id = $1', [eventId, JSON.stringify(input)]);
      await this.launch(input);
      return 'started';
    } catch (error) {
      // Not in hand: forget the event so the platform's redelivery is taken afresh.
      await pool.query('delete from messenger_events where id = $1 and not started', [eventId]).catch(() => undefined);
      throw error;
    }
  }

  /** The workflow input for the message: a reply that needs no model, or a prepared turn. */
  private async prepare(message: InboundMessage, eventId: string): Promise<MessengerMessageInput> {
    const { conversations, linking, chat } = this.dependencies;
    const target = { platform: message.platform, to: message.chat, eventId };
    const key = `${message.platform}:${message.chat}`;
    const session = await conversations.openSession(key, key, message.platform);
    const owned = { ...session, owner: key };
    if (message.greeting) {
      return {
        ...target,
        reply:
          'Hello! Send me a message and I will answer. To continue a conversation from the web or another app, ' +
          'type /link there and send me "/link CODE".',
      };
    }
    if (message.text === null) return { ...target, reply: 'I can only read text messages.' };
    const text = message.text.trim();
    if (text === '') return { ...target, reply: 'I can only read text messages.' };
    if (text.length > maxMessageChars) {
      return { ...target, reply: `That message is too long: ${maxMessageChars} characters at most.` };
    }
    // The edge's text rule (common/text.ts), answered in the chat: the platform's delivery itself was fine.
    const problem = textProblem(text);
    if (problem) return { ...target, reply: `I cannot read that message: it ${problem}.` };
    const command = parseLinkCommand(text, true);
    if (command) return { ...target, reply: await linking.run(owned, command) };
    if (/^\/start(@\w+)?$/.test(text)) return this.prepare({ ...message, greeting: true }, eventId);

    const owner = (await conversations.conversationOwner(session.conversationId)) ?? key;
    try {
      const chatter = await this.chatterOf(owner, key);
      const turn = await chat.prepare(
        chatter,
        { message: text, session_id: session.key, channel: message.platform },
        false,
        session,
      );
      return { ...target, turn };
    } catch (error) {
      if (error instanceof ApiError) return { ...target, reply: `Sorry, I cannot answer that now: ${error.message}` };
      throw error;
    }
  }

  /** Who pays for and is limited on a turn of a conversation with this owner; counts the message. */
  private async chatterOf(owner: string, chat: string): Promise<Chatter> {
    const { keys, limits } = this.dependencies;
    const userId = owner.startsWith('user:') ? owner.slice('user:'.length) : null;
    const principal = userId ? await keys.principalForUser(userId) : null;
    const subject = principal ? limits?.subjectFor(principal) : limits?.messengerSubject(chat);
    if (limits && subject) {
      const outcome = await limits.consume(subject);
      if (!outcome.allowed) {
        const minutes = Math.ceil((outcome.retryAfterSeconds ?? 60) / 60);
        throw new ApiError(
          'rate_limit_exceeded',
          `the message limit (${subject.scope}) is reached; try again in ${minutes} minutes`,
        );
      }
    }
    return principal ? { principal } : { guest: true };
  }

  /** Starts the event's workflow (a start that finds it already running or done is the same success). */
  private async launch(input: MessengerMessageInput): Promise<void> {
    const { client, taskQueue, pool, chat } = this.dependencies;
    const workflowId = `messenger-${input.eventId.replace(':', '-')}`;
    try {
      await client.workflow.start<typeof messengerMessage>('messengerMessage', {
        workflowId,
        taskQueue,
        args: [input],
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        typedSearchAttributes: [
          { key: kindKey, value: 'messenger-message' },
          { key: userKey, value: input.turn?.userId ?? 'guest' },
        ],
        staticSummary: `${input.platform} message ${input.eventId}${input.turn ? `, turn ${input.turn.turnId}` : ''}`,
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) {
        if (input.turn) await chat.abandon(input.turn);
        throw error;
      }
    }
    await pool.query('update messenger_events set started = true, input = null where id = $1', [input.eventId]);
  }
}
