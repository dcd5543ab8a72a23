/**
 * messengerMessage: one message from a messaging app, from its webhook to the answer in the chat (workflow id
 * `messenger-<platform>-<event id>`, so a redelivered event is recognised by Temporal as well). The webhook has
 * already done the quick part (verified, recorded, read commands, accepted the turn and held its credits): this
 * runs the conversation's turn as a child workflow (`chat-<conversation>-<turn>`, the same as a web turn) and sends
 * its answer, or sends a command's reply, through the platform by an activity that is retried and sends once.
 */
import { ApplicationFailure, ChildWorkflowFailure, executeChild, proxyActivities } from '@temporalio/workflow';
import type { createMessengerActivities } from '../activities/messengers/messenger-activities.ts';
import type { MessengerTarget } from '../common/messengers.ts';
import type { ChatTurnInput } from '../common/chat-turn.ts';
import { kindKey, modelKey, userKey } from '../common/search-attributes.ts';
import type { chatTurn } from './chat-turn.workflow.ts';

export interface MessengerMessageInput extends MessengerTarget {
  /** `<platform>:<event id>`: the row in messenger_events, and the name of the answer for idempotent sends. */
  eventId: string;
  /** A reply that needs no model (a command's answer, a refusal). */
  reply?: string;
  /** The turn that answers the message. */
  turn?: ChatTurnInput;
}

const { sendMessengerText } = proxyActivities<ReturnType<typeof createMessengerActivities>>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 20 },
});

export async function messengerMessage(input: MessengerMessageInput): Promise<{ sent: boolean; text: string }> {
  let text = input.reply ?? '';
  if (input.turn) {
    try {
      const result = await executeChild<typeof chatTurn>('chatTurn', {
        workflowId: input.turn.turnId,
        args: [input.turn],
        typedSearchAttributes: [
          { key: kindKey, value: 'chat-turn' },
          { key: userKey, value: input.turn.userId },
          { key: modelKey, value: input.turn.requestedModel },
        ],
        staticSummary: `Chat turn ${input.turn.turn} of ${input.turn.sessionKey} (${input.platform})`,
      });
      text = result.response;
    } catch (error) {
      // The turn failed (its error is in its own history): the user is told rather than left waiting.
      const cause = error instanceof ChildWorkflowFailure ? error.cause : error;
      const reason = cause instanceof ApplicationFailure ? cause.message : 'an internal error';
      text = `Sorry, I could not answer that: ${reason}`;
    }
  }
  if (!text) return { sent: false, text };
  await sendMessengerText({ platform: input.platform, to: input.to, eventId: input.eventId, text });
  return { sent: true, text };
}
