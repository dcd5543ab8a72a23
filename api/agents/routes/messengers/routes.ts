/**
 * `POST /send-to-messenger {channel: line|telegram|slack, text, chat?}` (spec 4.13): sends `text` to the caller's own
 * messaging app chats on that channel, those linked to their account (`ConversationStore.linkedChats`, what
 * `GET /auth/me` counts): the one named by `chat`, or every one. A chat id that is not one of the caller's (another
 * user's, or none at all) is a 404, as is a channel with no chat linked. Sent through the messengers' one send
 * (parts as the platform's limit requires, counted on a `messenger_events` row), so with an `Idempotency-Key` a
 * repeated request sends only what the first did not. → `{sent: [{channel, chat, parts}]}`.
 */
import Router from '@koa/router';
import { randomUUID } from 'node:crypto';
import type { ConversationStore } from '../../../../activities/conversations/conversation-store.ts';
import { createMessengerActivities } from '../../../../activities/messengers/messenger-activities.ts';
import type { MessengerClient } from '../../../../activities/messengers/messenger.ts';
import type { MessengerPlatform } from '../../../../common/messengers.ts';
import { runDeliveryId } from '../../../../common/agent-runs.ts';
import { deliveryIdPattern } from '../../../../common/webhooks.ts';
import type { Pool } from '../../../../db/pool.ts';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import { sendSchema } from './schema.ts';

export function messengerRoutes(dependencies: {
  pool: Pool;
  conversations: ConversationStore;
  messengers: Partial<Record<MessengerPlatform, MessengerClient>>;
}) {
  const { pool, conversations, messengers } = dependencies;
  const { sendMessengerText } = createMessengerActivities({ pool, messengers });
  const router = new Router<CallerState>();

  router.post('/send-to-messenger', async (context) => {
    const principal = requireCaller(context.state);
    const parsed = sendSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const { channel, text, chat } = parsed.data;
    const idempotencyKey = context.get('idempotency-key');
    if (idempotencyKey && (idempotencyKey.length > 100 || !deliveryIdPattern.test(idempotencyKey))) {
      throw new ApiError('invalid_request', 'Idempotency-Key must be 1-100 letters, digits or . _ : -', {
        param: 'Idempotency-Key',
      });
    }
    const linked = (await conversations.linkedChats(`user:${principal.userId}`)).filter(
      (target) => target.platform === channel,
    );
    const targets = chat === undefined ? linked : linked.filter((target) => target.to === chat);
    if (targets.length === 0) {
      throw chat === undefined
        ? new ApiError('not_found', `No ${channel} chat is linked to your account (link one with /link CODE)`, {
            param: 'channel',
          })
        : new ApiError('not_found', `No ${channel} chat ${chat} is linked to your account`, { param: 'chat' });
    }
    if (!messengers[channel]) throw new ApiError('service_unavailable', `${channel} is not configured here`);
    const name = `${principal.userId}.${idempotencyKey || randomUUID()}`;
    const sent = [];
    for (const target of targets) {
      const eventId = runDeliveryId('send', name, target);
      await pool.query(
        `insert into messenger_events (id, input, started, replied_parts, created_at)
         values ($1, null, true, 0, now()) on conflict (id) do nothing`,
        [eventId],
      );
      try {
        const { parts } = await sendMessengerText({ ...target, eventId, text });
        sent.push({ channel, chat: target.to, parts });
      } catch (error) {
        throw new ApiError('upstream_error', `${channel} refused the message: ${(error as Error).message}`);
      }
    }
    context.body = { sent };
  });

  return router;
}
