/**
 * The platform's own PostgreSQL unreachable while it serves: the gateway reaches its database through a loopback
 * proxy the test cuts (the machine's server, shared with other tests, stays up). While it is cut, /health says so and
 * requests answer 503 `service_unavailable` with Retry-After, never 500; a completion already accepted waits the
 * outage out and is answered once the database is back, charged once; the platform serves again by itself.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { waitFor } from '../helpers/wait.ts';

let platform: TestPlatform;
let proxy: TcpProxy | undefined;
let directUrl: string;

beforeAll(async () => {
  // The proxy exists before the platform reads its environment, pointed at the server its database is cloned on.
  const server = new URL(process.env.TESSERA_TEST_DATABASE_URL!);
  proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
  platform = await startTestPlatform((_simulator, databaseUrl) => {
    directUrl = databaseUrl;
    const proxied = new URL(databaseUrl);
    proxied.port = String(proxy!.port);
    return { DATABASE_URL: proxied.toString() };
  });
}, 120_000);

afterAll(async () => {
  await proxy?.restore().catch(() => undefined);
  await platform?.close();
  await proxy?.close();
});

async function health(): Promise<{ status: number; database: string }> {
  const response = await platform.fetch('/health');
  const body = (await response.json()) as { dependencies: { database: { status: string } } };
  return { status: response.status, database: body.dependencies.database.status };
}

/** Failed provider attempts this process counted (`GET /metrics`, which needs no database). */
async function failedAttempts(): Promise<number> {
  const text = await (await platform.fetch('/metrics')).text();
  const line = text.split('\n').find((row) => /^tessera_provider_attempts_total\{.*outcome="failed"/.test(row));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

async function sql<Row>(text: string, values: unknown[]): Promise<Row[]> {
  const client = new pg.Client({ connectionString: directUrl });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as Row[];
  } finally {
    await client.end();
  }
}

it('says so on /health and answers 503 with Retry-After while its database is unreachable, then serves again', async () => {
  const { key } = await platform.createKey();
  await proxy!.cut();
  try {
    await waitFor('/health to report the database down', async () => {
      const now = await health();
      return now.status === 503 && now.database === 'unavailable';
    });
    const refused = await platform.fetch('/v1/chat/completions', {
      method: 'POST',
      key,
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({ error: { type: 'service_unavailable', retry_after: 5 } });
    const account = await platform.agents('/api/v1/agents', { key });
    expect(account.status).toBe(503);
  } finally {
    await proxy!.restore();
  }
  await waitFor('/health to report the database back', async () => (await health()).status === 200);
  const served = await platform.fetch('/v1/chat/completions', {
    method: 'POST',
    key,
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }),
  });
  expect(served.status).toBe(200);
});

it('a completion whose first provider fails while the database is down fails over once it is back, charged once', async () => {
  const { key, user_id: userId } = await platform.createKey();
  await platform.simulator.resetRequests();
  // The first candidate answers 503 after a while: the database is cut while that call is in flight, so its failure,
  // its breaker bookkeeping and the failover's hold all meet the outage.
  await platform.simulator.addFault({
    match: { model: 'gpt-4o-mini-2024-07-18' },
    times: 1,
    fault: { status: 503, latency_ms: 1_500 },
  });
  const failedBefore = await failedAttempts();
  try {
    const answer = platform.fetch('/v1/chat/completions', {
      method: 'POST',
      key,
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Fail over through it' }] }),
    });
    await waitFor(
      'the first attempt to reach its provider',
      async () => (await platform.simulator.requests()).total > 0,
    );
    await proxy!.cut();
    try {
      await waitFor('/health to report the database down', async () => (await health()).status === 503);
      // The database stays down until the first attempt has failed (this process's attempt counter says so).
      await waitFor('the first attempt to fail', async () => (await failedAttempts()) > failedBefore, 30_000);
    } finally {
      await proxy!.restore();
    }
    const response = await answer;
    expect(response.status).toBe(200);
    const body = (await response.json()) as { id: string; model: string };
    expect(body.model).not.toBe('gpt-4o-mini');
    const ledger = await waitFor('the holds to clear', async () => {
      const rows = await sql<{ kind: string; attempt: number }>(
        `select kind, attempt from credit_ledger where workflow_id = $1 and kind in ('settle', 'release') order by id`,
        [`completion-${body.id}`],
      );
      const [user] = await sql<{ held: number }>('select credits_held as held from users where id = $1', [userId]);
      return user?.held === 0 && rows.length >= 2 && rows;
    });
    expect(ledger.filter((row) => row.kind === 'settle')).toEqual([{ kind: 'settle', attempt: 2 }]);
    expect(ledger.filter((row) => row.kind === 'release')).toEqual([{ kind: 'release', attempt: 1 }]);
  } finally {
    await platform.simulator.clearFaults();
  }
});

it('a chat turn whose tool call meets the outage waits for the database, then runs the tool and answers', async () => {
  const { key } = await platform.createKey();
  await platform.simulator.resetRequests();
  // The model's first answer (asking for the calculator) comes after a while: the database is cut while it is awaited,
  // so its journal, the tool call's journal and the turn's close all meet the outage.
  await platform.simulator.addFault({ times: 1, fault: { latency_ms: 1_500 } });
  const sessionId = `outage-${Date.now()}`;
  try {
    const answer = platform.fetch('/api/v1/chat', {
      method: 'POST',
      key,
      body: JSON.stringify({
        session_id: sessionId,
        message: `What is 6 * 7? [[call calculator ${JSON.stringify({ expression: '6 * 7' })}]]`,
      }),
    });
    await waitFor('the model call to reach its provider', async () => (await platform.simulator.requests()).total > 0);
    await proxy!.cut();
    try {
      await waitFor('/health to report the database down', async () => (await health()).status === 503);
      // Down until the model has answered, asking for the calculator.
      await waitFor('the model to answer', async () => (await platform.simulator.requests()).answered > 0);
    } finally {
      await proxy!.restore();
    }
    const response = await answer;
    const body = (await response.json()) as { response: string; tool_calls: Array<{ tool: string; ok: boolean }> };
    expect({ status: response.status, tool_calls: body.tool_calls }).toEqual({
      status: 200,
      tool_calls: [{ tool: 'calculator', ok: true }],
    });
    expect(body.response).toContain('42');
  } finally {
    await platform.simulator.clearFaults();
  }
});

/** Provider attempts this process counted with an outcome (`GET /metrics`, which needs no database). */
async function attemptsCounted(outcome: string): Promise<number> {
  const text = await (await platform.fetch('/metrics')).text();
  return text
    .split('\n')
    .filter((row) => row.startsWith('tessera_provider_attempts_total{') && row.includes(`outcome="${outcome}"`))
    .reduce((sum, row) => sum + Number(row.split(' ').at(-1)), 0);
}

it('a stream whose end meets the outage reaches its client whole, then its journal and its charge once the database is back', async () => {
  const { key, user_id: userId } = await platform.createKey();
  // The answer stalls after two tokens: the database is cut while it is under way, so its last journal batches, its
  // settlement and its workflow's record all meet the outage, which lasts until the call has ended.
  await platform.simulator.addFault({ times: 1, fault: { stall_after_tokens: 2, stall_ms: 1_500 } });
  const succeededBefore = await attemptsCounted('succeeded');
  let requestId = '';
  let streamed = '';
  try {
    const stream = await platform.openai(key).chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'Keep streaming through the outage' }],
      stream: true,
    });
    let cut = false;
    try {
      for await (const chunk of stream) {
        requestId = chunk.id;
        streamed += chunk.choices[0]?.delta.content ?? '';
        if (!cut && streamed) {
          await proxy!.cut();
          cut = true;
        }
      }
      expect(cut).toBe(true);
      // The client has the whole answer (its stream ended with [DONE], not an error), and the attempt ended as
      // served while the database is still unreachable: the call did not wait for it.
      await waitFor('the attempt to end', async () => (await attemptsCounted('succeeded')) > succeededBefore);
      expect((await health()).status).toBe(503);
    } finally {
      await proxy!.restore();
    }
    expect(streamed.length).toBeGreaterThan(0);
    // Once the database is back the workflow journals the stream's end: a client resuming it reads it whole.
    const resumed = await waitFor('the journal to hold the whole stream', async () => {
      const response = await platform.fetch(`/api/v1/requests/${requestId}/stream`, { key });
      if (response.status !== 200) return false;
      const body = await response.text();
      return body.trimEnd().endsWith('data: [DONE]') && body;
    });
    const text = resumed
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => (JSON.parse(line.slice(6)) as { choices: Array<{ delta: { content?: string } }> }).choices)
      .map((choices) => choices[0]?.delta.content ?? '')
      .join('');
    expect(text).toBe(streamed);
    expect(resumed).not.toMatch(/"error"/);
    const ledger = await waitFor('the charge and the hold', async () => {
      const rows = await sql<{ kind: string; attempt: number }>(
        `select kind, attempt from credit_ledger where workflow_id = $1 and kind in ('settle', 'release') order by id`,
        [`completion-${requestId}`],
      );
      const [user] = await sql<{ held: number }>('select credits_held as held from users where id = $1', [userId]);
      return user?.held === 0 && rows.length > 0 && rows;
    });
    expect(ledger).toEqual([{ kind: 'settle', attempt: 1 }]);
    const trace = await platform.fetch(`/api/v1/requests/${requestId}`, { key });
    expect(await trace.json()).toMatchObject({ status: 'completed' });
  } finally {
    await platform.simulator.clearFaults();
  }
});
