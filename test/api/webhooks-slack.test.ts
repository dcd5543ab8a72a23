/**
 * `POST /slack/events` and `POST /send-to-messenger` through HTTP (docs/webhooks.md, Slack), with Slack
 * played by the simulator (its Web API, and Events API deliveries signed as Slack signs them) and deliveries the test
 * signs itself: the URL verification challenge; a direct message from a chat not linked yet is told how to link; `/link
 * CODE` links the chat to an account as LINE and Telegram chats are linked; then a direct message and a mention in a
 * channel are answered (within Slack's 3 seconds) and the agent's reply is posted in the event's thread once, also
 * when Slack retries the event. Forged, stale, unsigned, oversize and malformed deliveries store nothing. The
 * verifier agrees with Slack's own documented example. `/send-to-messenger` reaches only the caller's own chats.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHmac, randomBytes } from 'node:crypto';
import pg from 'pg';
import { slackSignatureProblem } from '../../api/agents/routes/webhooks/deliveries.ts';
import { simulatedMessengerCredentials as credentials } from '../../scripts/lib/simulated-providers.ts';
import { newTelegramChat, simulatedMessengers } from '../helpers/messengers.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { waitFor, workflowClosed } from '../helpers/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

let platform: TestPlatform;
let database: pg.Client;
let owner: { key: string; user_id: string };
let stranger: { key: string; user_id: string };

beforeAll(async () => {
  platform = await startTestPlatform();
  database = new pg.Client({ connectionString: platform.databaseUrl });
  await database.connect();
  owner = await platform.createKey();
  stranger = await platform.createKey();
}, 300_000);

afterAll(async () => {
  await database?.end();
  await platform?.close();
});

const json = async (response: Response): Promise<Json> => (await response.json()) as Json;
const eventsUrl = () => `${platform.agentsUrl}/slack/events`;
const messengers = simulatedMessengers(() => platform);
let counter = 0;
const nextTs = () => `${Math.floor(Date.now() / 1000)}.${String(++counter).padStart(6, '0')}`;
const newEventId = () => `Ev${randomBytes(5).toString('hex').toUpperCase()}`;

/** Slack delivering an event through the simulator (signed with the app's signing secret): the answer and its time. */
async function slackDelivers(event: Json, options: { eventId?: string; retry?: number } = {}) {
  const started = Date.now();
  const delivered = await json(
    await fetch(`${platform.simulatorUrl}/slack/_deliver`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        webhook_url: eventsUrl(),
        signing_secret: credentials.SLACK_SIGNING_SECRET,
        event,
        event_id: options.eventId ?? newEventId(),
        ...(options.retry ? { retry_num: options.retry } : {}),
      }),
    }),
  );
  return { status: delivered.status as number, body: delivered.body as string, ms: Date.now() - started };
}

const directMessage = (channel: string, text: string, ts = nextTs()) => ({
  type: 'message',
  channel_type: 'im',
  channel,
  user: 'U0HUMAN',
  text,
  ts,
});

/** What was posted to a channel, waiting until there are at least `count` posts. */
async function posted(channel: string, count: number): Promise<Array<{ text: string; thread: string | null }>> {
  return waitFor(
    `${count} posts in ${channel}`,
    async () => {
      const { messages } = await json(await fetch(`${platform.simulatorUrl}/slack/_sent`));
      const mine = (messages as Array<{ to: string; text: string; thread: string | null }>).filter(
        (message) => message.to === channel,
      );
      return (count === 0 || mine.length >= count) && mine;
    },
    90_000,
  );
}

/** A delivery signed by the test itself, as Slack documents the signature. */
function signedFetch(body: string, options: { secret?: string; timestamp?: number; signature?: string | null } = {}) {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const signature =
    options.signature === undefined
      ? `v0=${createHmac('sha256', options.secret ?? credentials.SLACK_SIGNING_SECRET)
          .update(`v0:${timestamp}:${body}`)
          .digest('hex')}`
      : options.signature;
  return fetch(eventsUrl(), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-slack-request-timestamp': String(timestamp),
      ...(signature === null ? {} : { 'x-slack-signature': signature }),
    },
    body,
  });
}

const runCount = async () =>
  Number((await database.query<{ count: string }>('select count(*) from webhook_runs')).rows[0]!.count);

async function linkCode(key: string): Promise<string> {
  const issued = await platform.agents('/link/code', { key, headers: { accept: 'application/json' } });
  return (await json(issued)).code as string;
}

describe('Slack events', () => {
  const dm = `D${randomBytes(4).toString('hex').toUpperCase()}`;
  const channel = `C${randomBytes(4).toString('hex').toUpperCase()}`;

  it('agrees with the example signature Slack documents', () => {
    const body = Buffer.from(
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c',
    );
    const secret = '8f742231b10e8888abcd99yyyzzz85a5';
    const signature = 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503';
    expect(slackSignatureProblem(secret, body, '1531420618', signature, 1531420618_000)).toBeNull();
    expect(slackSignatureProblem(secret, body, '1531420618', signature, (1531420618 + 301) * 1000)).toContain(
      '5 minutes',
    );
    expect(slackSignatureProblem('another secret', body, '1531420618', signature, 1531420618_000)).toContain(
      'does not match',
    );
  });

  it('answers the URL verification challenge', async () => {
    const delivered = await json(
      await fetch(`${platform.simulatorUrl}/slack/_deliver`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          webhook_url: eventsUrl(),
          signing_secret: credentials.SLACK_SIGNING_SECRET,
          payload: { token: 'x', challenge: 'c-3po', type: 'url_verification' },
        }),
      }),
    );
    expect(delivered.status).toBe(200);
    expect(JSON.parse(delivered.body as string)).toEqual({ challenge: 'c-3po' });
  });

  it('tells a chat not linked yet how to link, in the thread', async () => {
    const ts = nextTs();
    const delivered = await slackDelivers(directMessage(dm, 'Hello there', ts));
    expect(delivered.status).toBe(200);
    const [reply] = await posted(dm, 1);
    expect(reply!.thread).toBe(ts);
    expect(reply!.text).toContain('/link CODE');
  }, 120_000);

  it('links a direct message chat by /link CODE, then answers in the thread within Slack’s 3 seconds, once', async () => {
    const code = await linkCode(owner.key);
    // Slack takes a leading "/" for its own commands: people type a space first.
    expect((await slackDelivers(directMessage(dm, ` /link ${code}`))).status).toBe(200);
    const afterLink = await posted(dm, 2);
    expect(afterLink[1]!.text).toContain('Linked');
    expect((await json(await platform.agents('/auth/me', { key: owner.key }))).linked_apps).toContain('slack');

    const ts = nextTs();
    const eventId = newEventId();
    const delivered = await slackDelivers(directMessage(dm, 'What is a good name for a cat?', ts), { eventId });
    expect(delivered.status).toBe(200);
    expect(delivered.ms).toBeLessThan(3_000);
    const answers = await posted(dm, 3);
    expect(answers[2]!.thread).toBe(ts);
    const runId = `webhook-slack-T0SIMULATED.${eventId}`;
    const run = await waitFor('the run', async () => {
      const view = await json(await platform.agents(`/webhook/runs/${runId}`, { key: owner.key }));
      return view.status === 'done' && view;
    });
    expect(run).toMatchObject({ source: 'slack', session_id: `slack:${dm}`, answer: answers[2]!.text });
    expect(run.agent_id).toEqual(expect.any(String));
    // Slack retries the event (its answer was slow, say): the same event id, nothing runs or posts again.
    const runsBeforeRetry = await runCount();
    const retried = await slackDelivers(directMessage(dm, 'What is a good name for a cat?', ts), {
      eventId,
      retry: 1,
    });
    expect(retried.status).toBe(200);
    // Posted once: the run's workflow, the only poster of its answer, has ended, and the retry made no run of its own.
    await workflowClosed(platform.environment.TEMPORAL_ADDRESS!, runId);
    expect(await runCount()).toBe(runsBeforeRetry);
    expect(await posted(dm, 0)).toHaveLength(3);
    // The run is the owner's alone.
    expect((await platform.agents(`/webhook/runs/${runId}`, { key: stranger.key })).status).toBe(404);
  }, 180_000);

  it('answers a mention in a linked channel, and ignores the bot’s own and unaddressed messages', async () => {
    const code = await linkCode(owner.key);
    const mention = (text: string, ts = nextTs()) => ({ type: 'app_mention', channel, user: 'U0HUMAN', text, ts });
    await slackDelivers(mention(`<@U0SIMBOT> /link ${code}`));
    expect((await posted(channel, 1))[0]!.text).toContain('Linked');
    const ts = nextTs();
    await slackDelivers(mention('<@U0SIMBOT> summarise our plan for Friday', ts));
    const answers = await posted(channel, 2);
    expect(answers[1]!.thread).toBe(ts);
    // The bot's own message, a channel message without a mention, an edit: nothing answers. The route decides that
    // before it records a run, and nothing but a run answers: no run, no answer (nothing to wait for).
    const runsBefore = await runCount();
    await slackDelivers({
      type: 'message',
      channel,
      channel_type: 'channel',
      bot_id: 'B0SIMBOT',
      text: 'hi',
      ts: nextTs(),
    });
    await slackDelivers({
      type: 'message',
      channel,
      channel_type: 'channel',
      user: 'U0HUMAN',
      text: 'hi',
      ts: nextTs(),
    });
    await slackDelivers({ ...directMessage(dm, 'edited'), subtype: 'message_changed' });
    expect(await runCount()).toBe(runsBefore);
    expect(await posted(channel, 0)).toHaveLength(2);
  }, 180_000);

  it('refuses forged, stale, unsigned, oversize and malformed deliveries, storing nothing', async () => {
    const before = await runCount();
    const body = JSON.stringify({
      type: 'event_callback',
      team_id: 'T0SIMULATED',
      event_id: newEventId(),
      event: directMessage(dm, 'forged'),
    });
    const forged = await signedFetch(body, { secret: 'not-the-signing-secret' });
    expect(forged.status).toBe(401);
    expect(await json(forged)).toEqual({
      error: {
        type: 'authentication_error',
        message: 'Bad Slack signature: X-Slack-Signature does not match the body',
      },
    });
    const stale = await signedFetch(body, { timestamp: Math.floor(Date.now() / 1000) - 6 * 60 });
    expect(stale.status).toBe(401);
    expect((await json(stale)).error.message).toContain('5 minutes');
    expect((await signedFetch(body, { signature: null })).status).toBe(401);
    const oversize = await signedFetch(JSON.stringify({ type: 'event_callback', padding: 'x'.repeat(1024 * 1024) }));
    expect(oversize.status).toBe(413);
    const malformed = await signedFetch('{"type": ');
    expect(malformed.status).toBe(400);
    expect((await json(malformed)).error.type).toBe('invalid_request');
    expect(await runCount()).toBe(before);
    // A correctly signed copy is taken (and answered in the chat: waited for, as the next test links the account).
    const answered = (await posted(dm, 0)).length;
    expect((await signedFetch(body)).status).toBe(200);
    await posted(dm, answered + 1);
  }, 60_000);
});

describe('POST /send-to-messenger', () => {
  it('sends to the caller’s own linked chats only', async () => {
    const telegram = newTelegramChat();
    await messengers.link('telegram', telegram, { key: owner.key });
    const sent = await platform.agents('/send-to-messenger', {
      method: 'POST',
      key: owner.key,
      body: JSON.stringify({ channel: 'telegram', text: 'The report is ready.', chat: telegram }),
    });
    expect(sent.status).toBe(200);
    expect(await json(sent)).toEqual({ sent: [{ channel: 'telegram', chat: telegram, parts: 1 }] });
    expect((await messengers.sentTo('telegram', telegram, 2))[1]).toBe('The report is ready.');

    // Slack: every linked Slack chat of the caller (the direct message and the channel linked above).
    const slack = await json(
      await platform.agents('/send-to-messenger', {
        method: 'POST',
        key: owner.key,
        body: JSON.stringify({ channel: 'slack', text: 'Standup in 5 minutes.' }),
      }),
    );
    expect(slack.sent).toHaveLength(2);

    // Another user's chat id, or a user with no chat: 404, nothing sent.
    for (const [key, body] of [
      [stranger.key, { channel: 'telegram', text: 'hi', chat: telegram }],
      [stranger.key, { channel: 'slack', text: 'hi' }],
      [owner.key, { channel: 'telegram', text: 'hi', chat: newTelegramChat() }],
      [owner.key, { channel: 'line', text: 'hi' }],
    ] as const) {
      const refused = await platform.agents('/send-to-messenger', { method: 'POST', key, body: JSON.stringify(body) });
      expect(refused.status).toBe(404);
      expect((await json(refused)).error.type).toBe('not_found');
    }
    expect(await messengers.sentTo('telegram', telegram, 0)).toHaveLength(2);
    const bad = await platform.agents('/send-to-messenger', {
      method: 'POST',
      key: owner.key,
      body: JSON.stringify({ channel: 'fax', text: 'hi' }),
    });
    expect(bad.status).toBe(400);
    expect((await json(bad)).error.param).toBe('channel');
    expect((await platform.agents('/send-to-messenger', { method: 'POST', body: '{}' })).status).toBe(401);
  }, 120_000);
});
