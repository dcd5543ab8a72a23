/**
 * Slack, played both ways (SLACK_API_BASE_URL=${sim}/slack/api): the Web API methods the agent service calls, and
 * the Events API deliveries Slack makes to it, signed as Slack signs them.
 *
 * - `POST /slack/api/auth.test` → `{ok, url, team, user, team_id: 'T0SIMULATED', user_id: 'U0SIMBOT', bot_id}`;
 *   `POST /slack/api/chat.postMessage {channel, text, thread_ts?}` (JSON or form-encoded, as the official client
 *   sends) → `{ok, channel, ts, message}`. Both want `Authorization: Bearer xoxb-…` (else `invalid_auth`, HTTP 200 as
 *   Slack answers); no text is `no_text`, a channel starting `C403` is `not_in_channel`. Other methods:
 *   `unknown_method`.
 * - `POST /slack/_deliver {webhook_url, signing_secret, event? | payload?, event_id?, team_id?, retry_num?,
 *   timestamp?}` POSTs an `event_callback` envelope around `event` (or `payload` as it is, for `url_verification`)
 *   with `X-Slack-Request-Timestamp` (now, or `timestamp`) and `X-Slack-Signature: v0=<hex HMAC-SHA256 of
 *   "v0:<timestamp>:<body>">`, plus `X-Slack-Retry-Num`/`-Reason` for a retry, and answers `{status, body,
 *   event_id}`.
 * - `GET /slack/_sent` lists what was posted (`{messages: [{to, text, thread, at}]}`), `DELETE` clears.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { sendJson } from '../transport.ts';
import type { SimulatedService } from './index.ts';

const maxBodyBytes = 1024 * 1024;
export const simulatedSlackIdentity = { teamId: 'T0SIMULATED', userId: 'U0SIMBOT', botId: 'B0SIMBOT' } as const;

let sent: Array<{ to: string; text: string; thread: string | null; at: string }> = [];
let sequence = 0;

/** A Web API call's arguments: Slack's client sends form-encoded bodies, and JSON for some methods. */
async function readArguments(request: IncomingMessage): Promise<Record<string, unknown> | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBodyBytes) return null;
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if ((request.headers['content-type'] ?? '').includes('json')) {
    try {
      const value: unknown = JSON.parse(text || '{}');
      return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : null;
    } catch {
      return null;
    }
  }
  return Object.fromEntries(new URLSearchParams(text));
}

/** A Slack timestamp (`<seconds>.<microseconds>`), unique within the simulator. */
function nextTs(): string {
  sequence += 1;
  return `${Math.floor(Date.now() / 1000)}.${String(sequence).padStart(6, '0')}`;
}

export const slackService: SimulatedService = {
  prefix: '/slack/',
  async handle(request, response, url) {
    const path = url.pathname.slice('/slack'.length);
    if (path === '/_sent') {
      if (request.method === 'DELETE') sent = [];
      return sendJson(response, 200, request.method === 'DELETE' ? { deleted: true } : { messages: sent });
    }
    if (path === '/_deliver') return deliver(request, response);
    const method = /^\/api\/([\w.]+)$/.exec(path)?.[1];
    if (!method) return sendJson(response, 404, { ok: false, error: 'unknown_method' });
    const args = await readArguments(request);
    const authorization = request.headers.authorization ?? '';
    if (!/^Bearer xox[bp]-\S+$/.test(authorization))
      return sendJson(response, 200, { ok: false, error: 'invalid_auth' });
    if (args === null) return sendJson(response, 200, { ok: false, error: 'invalid_arguments' });
    if (method === 'auth.test') {
      return sendJson(response, 200, {
        ok: true,
        url: 'https://tessera-sim.slack.com/',
        team: 'Tessera Simulated',
        user: 'tessera',
        team_id: simulatedSlackIdentity.teamId,
        user_id: simulatedSlackIdentity.userId,
        bot_id: simulatedSlackIdentity.botId,
        is_enterprise_install: false,
      });
    }
    if (method === 'chat.postMessage') {
      const channel = typeof args.channel === 'string' ? args.channel : '';
      const text = typeof args.text === 'string' ? args.text : '';
      if (!channel) return sendJson(response, 200, { ok: false, error: 'channel_not_found' });
      if (!text.trim()) return sendJson(response, 200, { ok: false, error: 'no_text' });
      if (text.length > 40_000) return sendJson(response, 200, { ok: false, error: 'msg_too_long' });
      if (channel.startsWith('C403')) return sendJson(response, 200, { ok: false, error: 'not_in_channel' });
      const thread = typeof args.thread_ts === 'string' && args.thread_ts ? args.thread_ts : null;
      const ts = nextTs();
      sent.push({ to: channel, text, thread, at: new Date().toISOString() });
      return sendJson(response, 200, {
        ok: true,
        channel,
        ts,
        message: {
          type: 'message',
          text,
          user: simulatedSlackIdentity.userId,
          bot_id: simulatedSlackIdentity.botId,
          ts,
          ...(thread ? { thread_ts: thread } : {}),
        },
      });
    }
    return sendJson(response, 200, { ok: false, error: 'unknown_method' });
  },
};

async function deliver(request: IncomingMessage, response: Parameters<SimulatedService['handle']>[1]) {
  const args = await readArguments(request);
  if (!args || typeof args.webhook_url !== 'string' || !/^https?:\/\//.test(args.webhook_url)) {
    return sendJson(response, 400, { error: 'webhook_url must be an http(s) URL' });
  }
  if (typeof args.signing_secret !== 'string') return sendJson(response, 400, { error: 'signing_secret is required' });
  const eventId =
    typeof args.event_id === 'string' ? args.event_id : `Ev${randomBytes(6).toString('hex').toUpperCase()}`;
  const teamId = typeof args.team_id === 'string' ? args.team_id : simulatedSlackIdentity.teamId;
  const payload =
    args.payload !== undefined
      ? args.payload
      : {
          token: 'deprecated-verification-token',
          team_id: teamId,
          api_app_id: 'A0SIMULATED',
          event: { event_ts: nextTs(), ...(args.event as Record<string, unknown>) },
          type: 'event_callback',
          event_id: eventId,
          event_time: Math.floor(Date.now() / 1000),
          authorizations: [{ team_id: teamId, user_id: simulatedSlackIdentity.userId, is_bot: true }],
        };
  const body = JSON.stringify(payload);
  const timestamp = typeof args.timestamp === 'number' ? args.timestamp : Math.floor(Date.now() / 1000);
  const signature = `v0=${createHmac('sha256', args.signing_secret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
  const retry = typeof args.retry_num === 'number' ? args.retry_num : 0;
  const answer = await fetch(args.webhook_url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'user-agent': 'Slackbot 1.0 (+https://api.slack.com/robots)',
      'x-slack-request-timestamp': String(timestamp),
      'x-slack-signature': signature,
      ...(retry > 0 ? { 'x-slack-retry-num': String(retry), 'x-slack-retry-reason': 'http_timeout' } : {}),
    },
    body,
  });
  sendJson(response, 200, { status: answer.status, body: await answer.text(), event_id: eventId });
}
