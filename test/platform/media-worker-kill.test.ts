/**
 * Asynchronous media jobs survive their workers: start the platform as `npm start` runs it, with Replicate played
 * by a simulator in this process (so the provider's predictions outlive the platform), submit 3 videos and 2 music
 * jobs, SIGKILL the whole platform once every job is `processing` and its polls are under way (the API process runs
 * a worker too, beside the background worker: both poll the same task queue, so killing one alone would only move
 * the jobs to the other), restart it, and every job finishes on its own: `completed` with its file served, its
 * credits held once and charged once (nothing left held), and each provider prediction created once (the jobs'
 * workflows resume from their history: the create activity's result, the provider job id, is not asked again).
 * Some predictions end while the platform is down, some run on after the restart. Every job has a `callback_url` on
 * a receiver in this process, which must accept exactly one delivery per job, each verified with its signature.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { setTimeout as sleep } from 'node:timers/promises';
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
import { workflowClosed } from '../helpers/wait.ts';
import { mediaWorkflowId } from '../../common/media.ts';

const videoModel = 'kwaivgi/kling-v1.6-standard';
const musicModel = 'meta/musicgen';
const pollIntervalMs = 500;

let simulator: RunningSimulator;
let setup: PlatformSetup;
let platform: PlatformProcess | undefined;
let passed = false;
/** The callbacks' receiver: every delivery it accepted, by `webhook-id`, with its body. */
let receiver: Server;
let receiverUrl: string;
const deliveries: Array<{ id: string; body: string; headers: Record<string, string> }> = [];

const log = (line: string) => process.stderr.write(`[media-worker-kill] ${line}\n`);

beforeAll(async () => {
  receiver = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      const headers = Object.fromEntries(
        ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [name, String(request.headers[name])]),
      );
      deliveries.push({ id: headers['webhook-id']!, body, headers });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverHost = `127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  receiverUrl = `http://${receiverHost}/media-done`;
  simulator = await startSimulator();
  setup = await platformSetup('media-worker-kill', simulator.url, {
    REPLICATE_API_TOKEN: 'r8_kill',
    REPLICATE_BASE_URL: simulator.url,
    MEDIA_POLL_INTERVAL_MS: String(pollIntervalMs),
    FETCH_ALLOWED_HOSTS: receiverHost,
  });
});

afterAll(async () => {
  await tearDownPlatform({ platform, simulator, setup, passed, log });
  await new Promise((resolve) => receiver?.close(resolve));
}, 60_000);

const sql = <Row>(text: string, values: unknown[] = []) => sqlOnce<Row>(setup.databaseUrl, text, values);

interface Job {
  kind: 'video' | 'music';
  prompt: string;
  body: Record<string, unknown>;
  id?: string;
  credits?: number;
}

interface Prediction {
  id: string;
  model: string;
  status: string;
  input: { prompt?: string };
}

/** Every prediction the simulator holds, through Replicate's list (newest first, paged). */
async function predictions(): Promise<Prediction[]> {
  const all: Prediction[] = [];
  for (let next: string | null = `${simulator.url}/v1/predictions`; next !== null;) {
    const response = await fetch(next, { headers: { authorization: 'Bearer r8_kill' } });
    const page = (await response.json()) as { next: string | null; results: Prediction[] };
    all.push(...page.results);
    next = page.next;
  }
  return all;
}

async function readJob(key: string, job: Job) {
  let response: Response;
  // The polls count against the account's request limit like any client's: a 429 (on a slow, busy machine the
  // polling lasts longer) is waited out as its Retry-After says, as a client would.
  for (;;) {
    response = await fetch(`${setup.apiUrl}/api/v1/media/${job.kind}/${job.id}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    if (response.status !== 429) break;
    await response.arrayBuffer();
    await sleep(Math.max(1, Number(response.headers.get('retry-after') ?? '1')) * 1000);
  }
  if (response.status !== 200) throw new Error(`GET ${job.kind} ${job.id}: ${response.status}`);
  return (await response.json()) as { status: string; video_url?: string; audio_url?: string; error?: string };
}

it('finishes video and music jobs killed mid-poll after a restart, each created, held and charged once', async () => {
  platform = startPlatformProcess(setup.environment);
  await platform.waitForHttp(`${setup.apiUrl}/health`, 180_000);
  const { key, userId } = await createBusinessKey(setup, 'media-kill');

  // Each prompt is unique to this run, so the simulator's list tells its predictions apart. Some runs end while the
  // platform is down (its restart takes several seconds), the 60 s ones after it is back.
  const tag = randomBytes(4).toString('hex');
  const jobs: Job[] = [
    ...[6, 12, 60].map((seconds, index): Job => {
      const prompt = `kill ${tag} video ${index} [[takes ${seconds}s]]`;
      return { kind: 'video', prompt, body: { prompt, duration: 5, callback_url: receiverUrl } };
    }),
    ...[8, 60].map((seconds, index): Job => {
      const prompt = `kill ${tag} music ${index} [[takes ${seconds}s]]`;
      return { kind: 'music', prompt, body: { prompt, duration: 10, callback_url: receiverUrl } };
    }),
  ];
  for (const job of jobs) {
    const response = await fetch(`${setup.apiUrl}/api/v1/media/${job.kind}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(job.body),
    });
    expect(response.status).toBe(job.kind === 'video' ? 202 : 200);
    const created = (await response.json()) as { video_id?: string; music_id?: string; credits_used: number };
    job.id = created.video_id ?? created.music_id;
    job.credits = created.credits_used;
  }

  // Kill once every job is `processing` and the provider has been polled for each (polls beyond the 5 creates).
  const control = simulatorControl(simulator.url);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const statuses = await Promise.all(jobs.map(async (job) => (await readJob(key, job)).status));
    const { by_model: byModel } = await control.requests();
    const polled = (byModel[videoModel] ?? 0) > 3 * 2 && (byModel[musicModel] ?? 0) > 2 * 2;
    if (statuses.every((status) => status === 'processing') && polled) break;
    if (Date.now() > deadline) throw new Error(`jobs not all polled in time: ${statuses.join(', ')}`);
    await sleep(100);
  }
  // Killed at once: every job is `processing` on the platform with its polls under way. (On a busy machine the 6 s
  // video may already be done at the provider, unseen by the platform: it is then one of those that end while the
  // platform is down. What follows holds either way.)
  const killed = await platform.kill();
  const killedAt = Date.now();
  log(`killed ${killed.length} processes with ${jobs.length} jobs processing`);

  platform = startPlatformProcess(setup.environment);
  await platform.waitForHttp(`${setup.apiUrl}/health`, 180_000);
  const restartedAt = Date.now();
  log(`restarted in ${((restartedAt - killedAt) / 1000).toFixed(1)} s`);

  const ended = new Map<string, { status: string; video_url?: string; audio_url?: string; error?: string }>();
  const endBy = Date.now() + 180_000;
  while (ended.size < jobs.length && Date.now() < endBy) {
    for (const job of jobs) {
      if (ended.has(job.id!)) continue;
      const view = await readJob(key, job);
      if (view.status !== 'completed' && view.status !== 'failed') continue;
      ended.set(job.id!, view);
      log(`${job.prompt}: ${view.status} ${((Date.now() - restartedAt) / 1000).toFixed(1)} s after the restart`);
    }
    await sleep(250);
  }
  log(`all ended ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`);

  for (const job of jobs) {
    const view = ended.get(job.id!);
    expect({ id: job.id, status: view?.status, error: view?.error }).toEqual({
      id: job.id,
      status: 'completed',
      error: undefined,
    });
    // The file is served, of the job's kind.
    const url = job.kind === 'video' ? view!.video_url : view!.audio_url;
    const file = await fetch(new URL(url!, setup.apiUrl));
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe(job.kind === 'video' ? 'video/mp4' : 'audio/mpeg');
    const bytes = new Uint8Array(await file.arrayBuffer());
    if (job.kind === 'video') expect(new TextDecoder().decode(bytes.subarray(4, 8))).toBe('ftyp');
    else expect(new TextDecoder().decode(bytes.subarray(0, 3)) === 'ID3' || bytes[0] === 0xff).toBe(true);
  }

  // Each job's price held once and charged once, in full; the account holds nothing back.
  for (const job of jobs) {
    const rows = await sql<{ kind: string; amount: number; attempt: number }>(
      'select kind, amount, attempt from credit_ledger where user_id = $1 and workflow_id = $2 order by id',
      [userId, `media-${job.kind}-${job.id}`],
    );
    expect(rows).toEqual([
      { kind: 'reserve', amount: job.credits, attempt: 1 },
      { kind: 'settle', amount: job.credits, attempt: 1 },
    ]);
  }
  const [account] = await sql<{ held: number }>('select credits_held as held from users where id = $1', [userId]);
  expect(account!.held).toBe(0);

  // Each job's prediction was created once, and it is the one its row names.
  const made = (await predictions()).filter((prediction) => prediction.input.prompt?.includes(tag));
  expect(made.map((prediction) => prediction.input.prompt).sort()).toEqual(jobs.map((job) => job.prompt).sort());
  const rows = await sql<{ id: string; provider_job_id: string }>(
    `select id, result->>'providerJobId' as provider_job_id from media_jobs where user_id = $1`,
    [userId],
  );
  for (const job of jobs) {
    const prediction = made.find((candidate) => candidate.input.prompt === job.prompt)!;
    expect(rows.find((row) => row.id === job.id)?.provider_job_id).toBe(prediction.id);
    expect(prediction.status).toBe('succeeded');
  }

  // Each job's callback was accepted once, signed with the account's secret, and says the job completed.
  const callbackDeadline = Date.now() + 60_000;
  while (deliveries.length < jobs.length && Date.now() < callbackDeadline) await sleep(200);
  // Each job's workflow, the only sender of its callback, has ended: a second copy would have come by now.
  for (const job of jobs) await workflowClosed(setup.temporalAddress, mediaWorkflowId(job.kind, job.id!));
  const secretResponse = await fetch(`${setup.apiUrl}/api/v1/media/callback-secret`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const { secret } = (await secretResponse.json()) as { secret: string };
  const webhook = new Webhook(secret);
  expect(deliveries.map((delivery) => delivery.id).sort()).toEqual(jobs.map((job) => `msg_${job.id}`).sort());
  for (const delivery of deliveries) {
    const payload = webhook.verify(delivery.body, delivery.headers) as { event: string; status: string };
    expect(payload).toMatchObject({ event: 'media.job.completed', status: 'completed' });
  }
  passed = true;
}, 480_000);
