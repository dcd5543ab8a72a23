/**
 * The messaging apps (LINE, Telegram and Slack) as the chat sees them: how a platform takes text (`MessengerClient`);
 * where an answer goes (`MessengerTarget`) and their settings are shared types, in common/messengers.ts. Each platform's wire protocol is in its own file;
 * the webhooks that receive messages are in api/gateway/routes/webhooks/ (LINE, Telegram) and
 * api/agents/routes/webhooks/ (Slack's Events API), and the activity that sends answers in messenger-activities.ts.
 * Both the gateway and the agent service send through these.
 */
export interface MessengerClient {
  /** Characters one message may carry; longer text is sent in parts. */
  readonly maxMessageChars: number;
  /**
   * Sends `parts` in order, from `firstPart` on, calling `sent(n)` after each delivered part (n: parts delivered).
   * `idempotencyKey` names this answer: a platform with idempotent sends (LINE's retry key) uses it. `thread`: the
   * thread to answer in, where the platform has threads (Slack).
   */
  send(
    to: string,
    parts: string[],
    firstPart: number,
    idempotencyKey: string,
    sent: (delivered: number) => Promise<void>,
    thread?: string,
  ): Promise<void>;
  /** The link that opens a chat with the bot carrying `payload` (a deep link), or null when the platform has none. */
  deepLink(payload: string): Promise<string | null>;
}

/** A send the platform refused for good (a blocked bot, an unknown chat): retrying cannot help. */
export class MessengerRejection extends Error {
  override readonly name = 'MessengerRejection';
}

/** Splits text into parts of at most `max` characters, preferring line breaks, then spaces, as cut points. */
export function splitMessage(text: string, max: number): string[] {
  const body = text.trim() === '' ? '(no answer)' : text;
  const parts: string[] = [];
  let rest = body;
  while (rest.length > max) {
    let cut = rest.lastIndexOf('\n', max);
    if (cut < max / 2) cut = rest.lastIndexOf(' ', max);
    if (cut < max / 2) cut = max;
    parts.push(rest.slice(0, cut));
    rest = rest.slice(cut).replace(/^[\n ]/, '');
  }
  if (rest.length) parts.push(rest);
  return parts;
}
