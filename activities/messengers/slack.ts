/**
 * Slack's Web API through the official client (@slack/web-api): answers are posted with `chat.postMessage` (in the
 * thread of the message they answer, `thread_ts`), and `auth.test` names the bot's own user (so the Events API
 * route can strip the bot's mention from `app_mention` text). The app is installed in one workspace with a bot
 * token (`xoxb-…`, SLACK_BOT_TOKEN); SLACK_API_BASE_URL points the client elsewhere (the simulator, `npm start`).
 *
 * The client's own retries are off (a send runs inside an activity whose retry policy is the one that counts, and
 * the client's default would retry for half an hour inside one attempt), as is its waiting out of rate limits (a
 * `ratelimited` answer fails the attempt, and the activity is retried with backoff). Slack's `chat.postMessage` has no
 * idempotency key: the parts already posted are counted on the event's row (messenger-activities.ts).
 *
 * Events reach the agent service's `POST /slack/events` (api/agents/routes/webhooks/slack.ts), signed with the app's
 * signing secret.
 */
import type { WebAPICallError, WebClient } from '@slack/web-api';
import { MessengerRejection, type MessengerClient } from './messenger.ts';
import type { MessengerSettings } from '../../common/messengers.ts';
import { loadOnce } from '../../process/load-once.ts';

/** Slack's SDK, imported at a process's first Slack call (a process that never talks to Slack does not carry it). */
const slackSdk = loadOnce(() => import('@slack/web-api'));

/** Slack truncates a message's text past 40,000 characters and advises far less; parts of 4,000 read well. */
const maxMessageChars = 4000;
const requestTimeoutMs = 15_000;

export class SlackClient implements MessengerClient {
  readonly maxMessageChars = maxMessageChars;
  private readonly client: () => Promise<WebClient>;
  private identity: Promise<{ userId: string; teamId: string }> | null = null;

  constructor(settings: NonNullable<MessengerSettings['slack']>) {
    this.client = loadOnce(async () => {
      const { LogLevel, WebClient } = await slackSdk();
      return new WebClient(settings.botToken, {
        slackApiUrl: settings.apiBaseUrl,
        retryConfig: { retries: 0 },
        rejectRateLimitedCalls: true,
        timeout: requestTimeoutMs,
        logLevel: LogLevel.ERROR,
        // Method names never override the base URL (the simulator's, or Slack's).
        allowAbsoluteUrls: false,
      });
    });
  }

  async send(
    to: string,
    parts: string[],
    firstPart: number,
    _idempotencyKey: string,
    sent: (delivered: number) => Promise<void>,
    thread?: string,
  ): Promise<void> {
    const client = await this.client();
    for (let index = firstPart; index < parts.length; index++) {
      try {
        await client.chat.postMessage({
          channel: to,
          text: parts[index]!,
          ...(thread ? { thread_ts: thread } : {}),
        });
      } catch (error) {
        throw await classify(error);
      }
      await sent(index + 1);
    }
  }

  /** Slack has no link that opens a chat with the bot carrying a payload: linking is by `/link CODE`. */
  async deepLink(): Promise<string | null> {
    return null;
  }

  /** The bot's own user id and workspace (`auth.test`), asked once per process. */
  async botIdentity(): Promise<{ userId: string; teamId: string }> {
    this.identity ??= this.client()
      .then((client) => client.auth.test())
      .then((answer) => ({ userId: answer.user_id ?? '', teamId: answer.team_id ?? '' }));
    try {
      return await this.identity;
    } catch (error) {
      this.identity = null;
      throw await classify(error);
    }
  }
}

/** Slack's refusals for good (`channel_not_found`, `not_in_channel`, `invalid_auth`…) are rejections; the rest retry. */
async function classify(error: unknown): Promise<Error> {
  const { ErrorCode } = await slackSdk();
  const failure = error as Partial<WebAPICallError>;
  if (failure.code === ErrorCode.PlatformError) {
    const code = (failure as { data: { error: string } }).data.error;
    const message = `Slack answered ${code}`;
    return code === 'ratelimited' || code === 'internal_error' || code === 'fatal_error'
      ? new Error(message)
      : new MessengerRejection(message);
  }
  if (failure.code === ErrorCode.HTTPError) {
    const status = (failure as { statusCode: number }).statusCode;
    const message = `Slack answered HTTP ${status}`;
    return status >= 400 && status < 500 && status !== 429 ? new MessengerRejection(message) : new Error(message);
  }
  if (failure.code === ErrorCode.RateLimitedError) return new Error('Slack rate-limited the call');
  return error instanceof Error ? error : new Error(String(error));
}
