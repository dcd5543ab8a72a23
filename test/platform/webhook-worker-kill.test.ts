/**
 * A webhook run survives its worker: a signed Standard Webhooks delivery is accepted (202), then the whole platform
 * (`npm start`) is SIGKILLed while the agent's model call is under way, and restarted. The run finishes on its own,
 * once: one turn in its session, each model call charged once, the answer forwarded to the owner's linked Telegram
 * chat once, and the same delivery sent again after the restart is answered with the first run.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { simulatedMessengers, simulatedMessengerCredentials } from '../../scripts/lib/simulated-providers.ts';
import { simulatorControl, startSimulator, type RunningSimulator } from '../../simulator/server.ts';
import {
  createBusinessKey,
  platformSetup,
  sqlOnce,
  startPlatformProcess,
  tearDownPlatform,
  type PlatformProcess,
  type PlatformSetup,
} from '../helpers/platform-process.ts';
import { waitFor, workflowClosed } from '../helpers/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

/**
 * The agent's model call sends its first token at once, then stalls this long, so the platform is killed during it.
 * A delay before the first byte (8 s, as before) left 2 s before the provider's 10 s first-byte timeout: on a busy
 * machine the kill came later, the call failed over to nothing, and the run ended `failed` before it (twice in CI).
 * A stall is cut by the 30 s idle timeout instead: 30 s for the kill to land.
 */
const modelStallMs = 120_000;

let simulator: RunningSimulator;
let setup: PlatformSetup;
let platform: PlatformProcess | undefined;
let passed = false;

const log = (line: string) => process.stderr.write(`[webhook-worker-kill] ${line}\n`);

beforeAll(async () => {
  simulator = await startSimulator();
  setup = await platformSetup('webhook-worker-kill', simulator.url, {
    TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    ...simulatedMessengers(simulator.url, {}),
  });
});

afterAll(async () => {
  await tearDownPlatform({ platform, simulator, setup, passed, log });
}, 60_000);

const sql = <Row>(text: string, values: unknown[] = []) => sqlOnce<Row>(setup.databaseUrl, text, values);
const json = async (response: Response): Promise<Json> => (await response.json()) as Json;

async function sentToTelegram(chat: string): Promise<string[]> {
  const { messages } = await json(await fetch(`${simulator.url}/telegram/_sent`));
  return (messages as Array<{ to: string; text: string }>).filter((message) => message.to === chat).map((m) => m.text);
}

it('finishes a webhook run killed mid-way after a restart, once', async () => {
  platform = startPlatformProcess(setup.environment);
  await platform.waitForHttp(`${setup.agentsUrl}/health`, 180_000);
  const { key, userId } = await createBusinessKey(setup, 'webhook-kill');

  // The owner links a Telegram chat (the code from the agent service, `/link CODE` sent from the chat).
  // Nine digits with no leading zero: Telegram's chat id is a number, so "012345678" would come back as "12345678".
  const chat = String(randomInt(100_000_000, 1_000_000_000));
  const { code } = await json(
    await fetch(`${setup.agentsUrl}/link/code`, {
      headers: { authorization: `Bearer ${key}`, accept: 'application/json' },
    }),
  );
  await fetch(`${simulator.url}/telegram/_deliver`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      webhook_url: `${setup.apiUrl}/webhooks/telegram`,
      secret_token: simulatedMessengerCredentials.TELEGRAM_WEBHOOK_SECRET,
      update: {
        update_id: 1,
        message: {
          message_id: 1,
          date: 1,
          chat: { id: Number(chat), type: 'private' },
          text: `/link ${code as string}`,
        },
      },
    }),
  });
  await waitFor('the link', async () => (await sentToTelegram(chat)).some((text) => text.includes('Linked')), 60_000);

  const created = await fetch(`${setup.agentsUrl}/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ agent_id: 'general', forward_to_messengers: true }),
  });
  expect(created.status).toBe(201);
  const webhook = await json(created);

  const control = simulatorControl(simulator.url);
  await control.addFault({ times: 1, fault: { stall_after_tokens: 1, stall_ms: modelStallMs } });
  const before = (await control.requests()).total;
  const messageId = `msg_${randomUUID()}`;
  const body = JSON.stringify({ event: 'invoice.paid', invoice: { id: 'in_1', amount: 4200 } });
  const deliver = () => {
    const at = new Date();
    return fetch(webhook.url as string, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': messageId,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(webhook.secret as string).sign(messageId, at, body),
      },
      body,
    });
  };
  const accepted = await deliver();
  expect(accepted.status).toBe(202);
  const runId = (await json(accepted)).run_id as string;

  // Killed once the agent's model call reached the provider.
  await waitFor('the model call', async () => (await control.requests()).total > before, 60_000);
  await platform.kill();
  log(`killed during ${runId}`);

  platform = startPlatformProcess(setup.environment);
  await platform.waitForHttp(`${setup.agentsUrl}/health`, 180_000);
  const run = await waitFor(
    'the run to finish',
    async () => {
      const view = await json(
        await fetch(`${setup.agentsUrl}/webhook/runs/${runId}`, { headers: { authorization: `Bearer ${key}` } }),
      );
      return (view.status === 'done' || view.status === 'failed') && view;
    },
    180_000,
  );
  // The whole view on a failure (its error says why the run ended): toMatchObject would show the status alone.
  expect(run).toEqual(expect.objectContaining({ status: 'done' }));

  // Answered once: in the chat (after the link's confirmation), one turn in the run's session.
  await waitFor('the forwarded answer', async () => (await sentToTelegram(chat)).length >= 2, 60_000);
  const again = await deliver();
  expect(again.status).toBe(202);
  expect(await json(again)).toMatchObject({ run_id: runId, duplicate: true, status: 'done' });
  // Forwarded once: the run's workflow, the only sender of its answer, has ended (the repeat started none).
  await workflowClosed(setup.temporalAddress, runId);
  expect((await sentToTelegram(chat)).slice(1)).toEqual([run.answer]);
  const turns = await sql<{ id: string; status: string }>(
    `select t.id, t.status from chat_turns t join chat_sessions s on s.conversation_id = t.conversation_id
     where s.key = $1`,
    [run.session_id],
  );
  expect(turns).toEqual([{ id: run.turn_id, status: 'done' }]);
  expect(await sql('select id from webhook_runs where id = $1', [runId])).toHaveLength(1);

  // Each model call reserved once and settled once; nothing is held back.
  const ledger = await sql<{ kind: string; attempt: number }>(
    'select kind, attempt from credit_ledger where user_id = $1 and workflow_id = $2 order by id',
    [userId, run.turn_id],
  );
  const byAttempt = new Map<number, string[]>();
  for (const row of ledger) byAttempt.set(row.attempt, [...(byAttempt.get(row.attempt) ?? []), row.kind]);
  expect([...byAttempt.values()].every((kinds) => kinds.join() === 'reserve,settle')).toBe(true);
  const [account] = await sql<{ held: number }>('select credits_held as held from users where id = $1', [userId]);
  expect(account!.held).toBe(0);
  passed = true;
}, 600_000);
