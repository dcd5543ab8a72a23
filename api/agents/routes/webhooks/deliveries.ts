/**
 * The inbound webhook receivers (docs/webhooks.md), each verifying its sender's own signature over the raw
 * body, so they are mounted before the JSON body parser (api/agents/app.ts); each applies the edge's text rule
 * (common/text.ts) to what it takes itself. In every one, in this order: a body past the route's limit is 413, a
 * missing or bad signature (or an unknown webhook) 401, malformed JSON 400 — and none of them stores or starts
 * anything. An accepted delivery is recorded and its run started (api/services/webhooks/runs.ts), answered at once:
 *
 * - `POST /webhook/{agent_id}?hook=<webhook id>`: Standard Webhooks (`webhook-id`, `webhook-timestamp` within 5
 *   minutes, `webhook-signature`), the body (JSON or text) is the agent's message. 202 `{run_id, status,
 *   duplicate, status_url}`; a repeated `webhook-id` is answered with the first run.
 * - `POST /webhook/github?hook=<webhook id>`: GitHub's `X-Hub-Signature-256` (checked with
 *   `@octokit/webhooks-methods`), `X-GitHub-Event`, `X-GitHub-Delivery` (the delivery id). `ping` is answered 200;
 *   events that wake the agent 202 with the run; others 200 `{ignored}` (github-events.ts).
 * - `POST /slack/events`: Slack's signing secret (`X-Slack-Signature: v0=<hex HMAC-SHA256 of
 *   "v0:<X-Slack-Request-Timestamp>:<body>">`, the timestamp within 5 minutes), `url_verification` answered with its
 *   challenge, `event_callback` for `app_mention` (in channels) and direct messages answered 200 at once (Slack wants
 *   an answer within 3 seconds); the agent's reply is posted to the thread later. Slack's retries
 *   (`X-Slack-Retry-Num`) carry the same `event_id`, which names the run: nothing runs twice.
 *
 * Limits: these paths are not among spec 8's per-IP prefixes (`/chat`, `/api`, `/a2a`), and are deliberately left
 * out of a per-IP count: GitHub and Slack deliver every customer's events from a few shared addresses, so a per-IP
 * limit would let one busy account starve all others. What bounds a sender instead is its secret (nothing is counted
 * or stored before the signature is checked) and the owner's plan limits, which each new run of the standard and
 * GitHub webhooks consumes (429 with Retry-After; a Slack message's limit is answered in its thread).
 */
import Router from '@koa/router';
import { verifyWithFallback } from '@octokit/webhooks-methods';
import type { Context } from 'koa';
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { MessengerSettings } from '../../../../common/messengers.ts';
import type { SlackClient } from '../../../../activities/messengers/slack.ts';
import { verifyStandardWebhook, webhookToleranceSeconds } from '../../../../activities/net/standard-webhooks.ts';
import type { DeliveryWebhook, WebhookStore } from '../../../../activities/webhooks/webhook-store.ts';
import { textProblem } from '../../../../common/text.ts';
import { deliveryIdPattern, webhookRunId } from '../../../../common/webhooks.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import type { RateLimits } from '../../../rate-limit.ts';
import { readRawBody } from '../../../raw-body.ts';
import { refuseUnacceptableText } from '../../../text-policy.ts';
import type { Principal } from '../../../services/apikeys/service.ts';
import { githubWake, parseGitHubPayload } from '../../../services/webhooks/github-events.ts';
import { slackEnvelopeSchema as slackEnvelope } from './schema.ts';
import { webhookSessionKey, type WebhookRunRow, type WebhookRuns } from '../../../services/webhooks/runs.ts';

/**
 * Body limits. A standard delivery's body is the agent's message, which the chat takes up to 32,000 characters: a
 * body is read up to 128 KiB and its text held to that. GitHub sends payloads of up to 25 MB (a push of many commits);
 * the agent reads a summary, and 5 MiB leaves room for any issue, comment or pull request. Slack's events are small.
 */
export const webhookBodyLimits = { standard: 128 * 1024, github: 5 * 1024 * 1024, slack: 1024 * 1024 } as const;
const maxMessageChars = 32_000;
/** `webhook-id`s and GitHub's delivery GUIDs fit in this many characters (a run id must stay readable). */
const maxDeliveryIdChars = 100;
const hookIdPattern = /^whk_[A-Za-z0-9_-]{16}$/;

export interface DeliveryDependencies {
  store: WebhookStore | null;
  runs: WebhookRuns;
  limits: RateLimits | undefined;
  principalForUser(userId: string): Promise<Principal | null>;
  slack: MessengerSettings['slack'];
  slackClient: SlackClient | null;
}

export function webhookDeliveryRoutes(dependencies: DeliveryDependencies) {
  const { runs } = dependencies;
  const router = new Router();

  /** The webhook `?hook=` names, if it is of this kind (and agent): else the delivery is refused unsigned. */
  const webhookOf = async (context: Context, accepts: (webhook: DeliveryWebhook) => boolean) => {
    const id = context.query.hook;
    const webhook =
      dependencies.store && typeof id === 'string' && hookIdPattern.test(id)
        ? await dependencies.store.forDelivery(id)
        : null;
    if (!webhook || !accepts(webhook)) {
      throw new ApiError(
        'authentication_error',
        'No webhook matches this URL: deliver to the URL given when the webhook was created (it names it in ?hook=)',
      );
    }
    return webhook;
  };

  /** Counts a new run against the owner's plan limits (429 past them). */
  const admitFor = (context: Context, userId: string) => async () => {
    const { limits } = dependencies;
    if (!limits) return;
    const principal = await dependencies.principalForUser(userId);
    const subject = principal ? limits.subjectFor(principal) : null;
    if (subject) await limits.enforce(context, subject);
  };

  const accepted = (context: Context, row: WebhookRunRow, duplicate: boolean) => {
    context.status = 202;
    context.body = {
      run_id: row.id,
      status: row.status,
      duplicate,
      status_url: `/webhook/runs/${encodeURIComponent(row.id)}`,
    };
  };

  router.post('/webhook/github', async (context) => {
    const raw = await readRawBody(context.req, webhookBodyLimits.github, { status: 413, what: 'A GitHub delivery' });
    const webhook = await webhookOf(context, (candidate) => candidate.source === 'github');
    const signature = context.get('x-hub-signature-256');
    // The current secret, then the previous one during a rotation's grace (the library's fallback secrets).
    const [current, ...previous] = webhook.secrets;
    const verified =
      !!signature &&
      (await verifyWithFallback(current!, raw.toString('utf8'), signature, previous).catch(() => false)) === true;
    if (!verified) {
      throw new ApiError('authentication_error', 'X-Hub-Signature-256 is missing or does not match the body');
    }
    const event = context.get('x-github-event');
    const delivery = context.get('x-github-delivery');
    if (!event) throw new ApiError('invalid_request', 'X-GitHub-Event is missing', { param: 'X-GitHub-Event' });
    checkDeliveryId(delivery, 'X-GitHub-Delivery');
    const json = parseJson(raw);
    refuseUnacceptableText(json);
    const parsed = parseGitHubPayload(json);
    if (!parsed.ok) throw invalidRequest(parsed.error);
    const { payload } = parsed;
    if (event === 'ping') {
      context.body = { ok: true, hook: webhook.id, zen: payload.zen ?? null };
      return;
    }
    const repository = payload.repository?.full_name.toLowerCase();
    if (repository !== webhook.repository) {
      context.body = {
        ignored: `the event is about ${repository ?? 'no repository'}; this webhook is for ${webhook.repository}`,
      };
      return;
    }
    const wake = githubWake(event, payload, webhook.repository!, delivery, webhook.canComment);
    if (!wake.wake) {
      context.body = { ignored: wake.reason };
      return;
    }
    const deliveryId = `${webhook.id}.${delivery}`;
    const { row, duplicate } = await runs.accept(
      {
        id: webhookRunId(webhook.agentId, deliveryId),
        userId: webhook.userId,
        source: 'github',
        webhookId: webhook.id,
        agentId: webhook.agentId,
        deliveryId,
        sessionKey: wake.sessionKey,
        message: wake.message,
        options: {
          github: {
            repository: webhook.repository!,
            canComment: webhook.canComment,
            commentWithoutApproval: webhook.commentWithoutApproval,
          },
        },
      },
      admitFor(context, webhook.userId),
    );
    accepted(context, row, duplicate);
  });

  router.post('/webhook/:agent_id', async (context) => {
    const agentId = context.params.agent_id!;
    const raw = await readRawBody(context.req, webhookBodyLimits.standard, { status: 413, what: 'A webhook delivery' });
    const webhook = await webhookOf(
      context,
      (candidate) => candidate.source === 'standard' && candidate.agentId === agentId,
    );
    const verification = verifyStandardWebhook(webhook.secrets, raw, {
      id: context.get('webhook-id'),
      timestamp: context.get('webhook-timestamp'),
      signature: context.get('webhook-signature'),
    });
    if (!verification.ok) throw new ApiError('authentication_error', `Bad webhook signature: ${verification.reason}`);
    checkDeliveryId(verification.id, 'webhook-id');
    const message = messageOf(raw, context.get('content-type'));
    const deliveryId = `${webhook.id}.${verification.id}`;
    const runId = webhookRunId(agentId, deliveryId);
    const { row, duplicate } = await runs.accept(
      {
        id: runId,
        userId: webhook.userId,
        source: 'standard',
        webhookId: webhook.id,
        agentId,
        deliveryId,
        sessionKey: webhookSessionKey(`webhook:${deliveryId}`),
        message,
        options: { forwardToMessengers: webhook.forwardToMessengers },
      },
      admitFor(context, webhook.userId),
    );
    accepted(context, row, duplicate);
  });

  router.post('/slack/events', async (context) => {
    const settings = dependencies.slack;
    if (!settings) {
      throw new ApiError('service_unavailable', 'Slack is not configured here (SLACK_SIGNING_SECRET, SLACK_BOT_TOKEN)');
    }
    const raw = await readRawBody(context.req, webhookBodyLimits.slack, { status: 413, what: 'A Slack event' });
    const refusal = slackSignatureProblem(
      settings.signingSecret,
      raw,
      context.get('x-slack-request-timestamp'),
      context.get('x-slack-signature'),
    );
    if (refusal) throw new ApiError('authentication_error', `Bad Slack signature: ${refusal}`);
    const parsed = slackEnvelope.safeParse(parseJson(raw));
    if (!parsed.success) throw invalidRequest(parsed.error);
    const envelope = parsed.data;
    if (envelope.type === 'url_verification') {
      context.body = { challenge: envelope.challenge ?? '' };
      return;
    }
    const event = envelope.event;
    if (envelope.type !== 'event_callback' || !event || !envelope.event_id) {
      context.body = {};
      return;
    }
    checkDeliveryId(envelope.event_id, 'event_id');
    const channel = event.channel ?? '';
    const direct = event.type === 'message' && event.channel_type === 'im';
    // A mention in a direct message arrives as a message too: the mention is answered only in channels.
    const mention = event.type === 'app_mention' && !channel.startsWith('D');
    const bot = await dependencies.slackClient?.botIdentity().catch(() => null);
    const own = event.bot_id !== undefined || (bot !== null && bot !== undefined && event.user === bot.userId);
    if (!(direct || mention) || own || event.subtype !== undefined || !channel || !event.ts) {
      context.body = {};
      return;
    }
    const team = envelope.team_id ?? 'team';
    const deliveryId = `${team}.${envelope.event_id}`;
    const text = stripMention(event.text ?? '', bot?.userId);
    await runs.accept({
      id: webhookRunId('slack', deliveryId),
      userId: null,
      source: 'slack',
      webhookId: null,
      agentId: null,
      deliveryId,
      sessionKey: `slack:${channel}`,
      message: text.length > maxMessageChars ? text.slice(0, maxMessageChars) : text,
      options: { slack: { team, channel, thread: event.thread_ts ?? event.ts } },
    });
    context.body = {};
  });

  return router;
}

/**
 * Why a Slack request's signature is not valid, or null: `v0=` + hex HMAC-SHA256 of `v0:<timestamp>:<raw body>`
 * with the signing secret, the timestamp within `webhookToleranceSeconds` of now (Slack's own advice is 5 minutes).
 */
export function slackSignatureProblem(
  signingSecret: string,
  raw: Buffer,
  timestamp: string,
  signature: string,
  now = Date.now(),
): string | null {
  if (!timestamp || !signature) return 'X-Slack-Request-Timestamp and X-Slack-Signature are required';
  if (!/^\d{1,12}$/.test(timestamp)) return 'X-Slack-Request-Timestamp is not a number of seconds';
  if (Math.abs(now / 1000 - Number(timestamp)) > webhookToleranceSeconds) {
    return `X-Slack-Request-Timestamp is not within ${webhookToleranceSeconds / 60} minutes of now`;
  }
  const expected = Buffer.from(
    `v0=${createHmac('sha256', signingSecret).update(`v0:${timestamp}:`).update(raw).digest('hex')}`,
  );
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected)
    ? null
    : 'X-Slack-Signature does not match the body';
}

/** The text after the bot's own mention (`<@U…>`, Slack's encoding of a mention), trimmed. */
function stripMention(text: string, botUserId: string | undefined): string {
  const mention = botUserId ? new RegExp(`<@${botUserId}(\\|[^>]*)?>`, 'g') : /^\s*<@[A-Z0-9]+(\|[^>]*)?>/;
  return text.replace(mention, '').trim();
}

function checkDeliveryId(id: string, header: string): void {
  if (!id || id.length > maxDeliveryIdChars || !deliveryIdPattern.test(id)) {
    throw new ApiError(
      'invalid_request',
      `${header} must be 1-${maxDeliveryIdChars} letters, digits or . _ : - (it names the delivery)`,
      { param: header },
    );
  }
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw new ApiError('invalid_request', 'The body is not JSON');
  }
}

/**
 * A standard delivery's message: a JSON body (Content-Type `application/json` or `+json`) as sent, once it parses and
 * its strings pass the text rule; any other body as UTF-8 text. Empty, not UTF-8, or longer than the chat takes: 400
 * (413 for the length).
 */
function messageOf(raw: Buffer, contentType: string): string {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
  } catch {
    throw new ApiError('invalid_request', 'The body is not UTF-8 text');
  }
  if (/json/i.test(contentType)) refuseUnacceptableText(parseJson(raw));
  else {
    const problem = textProblem(text);
    if (problem) throw new ApiError('invalid_request', `body: ${problem}`);
  }
  if (text.trim() === '') throw new ApiError('invalid_request', 'The body is empty: it is the agent’s message');
  if (text.length > maxMessageChars) {
    throw new ApiError('payload_too_large', `The body is the agent's message: ${maxMessageChars} characters at most`);
  }
  return text;
}
