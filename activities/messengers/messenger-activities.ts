/**
 * The activity that sends an answer to a messaging app (workflows/messenger-message.workflow.ts). It is retried
 * by the workflow; what a retry must not repeat is kept: LINE deduplicates by retry key, and for Telegram and Slack
 * the parts already delivered are counted on the event's row (`messenger_events.replied_parts`) and skipped. A crash
 * between the platform accepting a part and that count being written can still repeat that one part: neither
 * Telegram's Bot API nor Slack's chat.postMessage offers an idempotency key to close the gap.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Pool } from '../../db/pool.ts';
import { LineClient } from './line.ts';
import { MessengerRejection, splitMessage, type MessengerClient } from './messenger.ts';
import type { MessengerPlatform, MessengerSettings, MessengerTarget } from '../../common/messengers.ts';
import { SlackClient } from './slack.ts';
import { TelegramClient } from './telegram.ts';

/** The clients of the platforms this deployment has configured. */
export function messengerClients(settings: MessengerSettings): Partial<Record<MessengerPlatform, MessengerClient>> {
  return {
    ...(settings.line ? { line: new LineClient(settings.line) } : {}),
    ...(settings.telegram ? { telegram: new TelegramClient(settings.telegram) } : {}),
    ...(settings.slack ? { slack: new SlackClient(settings.slack) } : {}),
  };
}

export function createMessengerActivities(dependencies: {
  pool: Pool;
  messengers: Partial<Record<MessengerPlatform, MessengerClient>>;
}) {
  return {
    /** Sends `text` to the target as the answer to event `eventId` (parts as the platform's limit requires). */
    async sendMessengerText(input: MessengerTarget & { eventId: string; text: string }): Promise<{ parts: number }> {
      const client = dependencies.messengers[input.platform];
      if (!client) {
        throw ApplicationFailure.nonRetryable(`${input.platform} is not configured here`, 'MessengerNotConfigured');
      }
      const parts = splitMessage(input.text, client.maxMessageChars);
      const { rows } = await dependencies.pool.query<{ replied_parts: number }>(
        'select replied_parts from messenger_events where id = $1',
        [input.eventId],
      );
      const firstPart = rows[0]?.replied_parts ?? 0;
      try {
        await client.send(
          input.to,
          parts,
          firstPart,
          input.eventId,
          async (delivered) => {
            await dependencies.pool.query('update messenger_events set replied_parts = $2 where id = $1', [
              input.eventId,
              delivered,
            ]);
          },
          input.thread,
        );
      } catch (error) {
        if (error instanceof MessengerRejection) {
          throw ApplicationFailure.nonRetryable(error.message, 'MessengerRejected');
        }
        throw error;
      }
      return { parts: parts.length };
    },
  };
}
