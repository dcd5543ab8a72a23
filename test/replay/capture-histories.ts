/**
 * Captures workflow histories for the replay test: runs completions (plain, streamed, tool call, failover,
 * failure) against a throwaway platform and writes their histories to test/replay/histories/.
 * Sets up Temporal and PostgreSQL like `npm test` does. Usage: node test/replay/capture-histories.ts [label]
 * The label prefixes the file names (e.g. `metered`): keep earlier captures while workflows like them may still run.
 *
 * `--agents` captures agent-service turns instead (`chatTurn`): one with a plan, a tool and an approved approval, one
 * whose approval expired, and the last run of a loop that continued as new.
 *
 * `--routed` captures one agent-service turn that routes its message in its first step (`routeMessage`, issue 21),
 * and nothing else.
 */
import { execFileSync } from 'node:child_process';
import { Client, Connection } from '@temporalio/client';
import { writeFileSync } from 'node:fs';
import { ensureTemporalCli } from '../../scripts/lib/temporal-cli.ts';
import { callDirective as call, createCustomAgent } from '../helpers/agents.ts';
import globalSetup from '../helpers/global-setup.ts';
import globalTeardown from '../helpers/global-teardown.ts';
import { startTestPlatform } from '../helpers/platform.ts';
import { startTestSmtp } from '../helpers/smtp.ts';

const agentsOnly = process.argv.includes('--agents');
const routedOnly = process.argv.includes('--routed');
const labelArgument = process.argv.slice(2).find((argument) => !argument.startsWith('--'));
const label = labelArgument ? `${labelArgument}-` : '';
await globalSetup();
const cli = await ensureTemporalCli();
const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
const capture = (workflowId: string, file: string) => {
  const history = execFileSync(cli, ['workflow', 'show', '--address', address, '-w', workflowId, '--output', 'json']);
  writeFileSync(new URL(`./histories/${file}.json`, import.meta.url), history);
  console.log(`captured ${file}`);
};

if (agentsOnly) {
  await captureAgentTurns();
  await globalTeardown();
  process.exit(0);
}

if (routedOnly) {
  await captureRoutedTurn();
  await globalTeardown();
  process.exit(0);
}

const platform = await startTestPlatform();
const { key } = await platform.createKey();
const openai = platform.openai(key);
const ids: Record<string, string> = {};
const messages = [{ role: 'user' as const, content: 'Replay me' }];

ids.plain = (await openai.chat.completions.create({ model: 'gpt-4o-mini', messages })).id;
for await (const chunk of await openai.chat.completions.create({ model: 'claude-haiku-4-5', messages, stream: true }))
  ids.streamed = chunk.id;
ids.tools = (
  await openai.chat.completions.create({
    model: 'gemini-2.5-flash',
    messages,
    tools: [
      {
        type: 'function',
        function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
      },
    ],
  })
).id;
await platform.simulator.addFault({ match: { model: 'gpt-4o-2024-11-20' }, fault: { status: 503 } });
ids.failover = (await openai.chat.completions.create({ model: 'gpt-4o', messages })).id;
await platform.simulator.addFault({ fault: { status: 500 } });
const failure = await openai.chat.completions
  .create({ model: 'deepseek-chat', messages })
  .catch((error: { headers?: Headers }) => error);
const failedId = (failure as { headers?: Headers }).headers?.get('x-request-id');
if (failedId) ids.failure = failedId;
await platform.simulator.clearFaults();

// The CLI's JSON export is the format the SDK's replayer reads (historyFromJSON).
for (const [name, id] of Object.entries(ids)) capture(`completion-${id}`, `${label}completion-${name}`);
await platform.close();
await globalTeardown();

async function captureAgentTurns(): Promise<void> {
  const smtp = await startTestSmtp();
  const agents = await startTestPlatform({
    SMTP_URL: smtp.url,
    AGENT_APPROVAL_TIMEOUT: '2s',
    AGENT_LOOP_ITERATIONS_PER_RUN: '2',
  });
  const { key: agentKey } = await agents.createKey();
  const ops = await createCustomAgent(agents, agentKey, {
    name: 'Ops',
    description: 'Plans, calculates and sends e-mail',
    system_prompt: 'You are an operations assistant.',
    tools: ['update_plan', 'calculator', 'send_email'],
  });
  /** Starts a turn and reads its stream in the background; `until` waits for a line containing the text. */
  const start = async (path: string, body: unknown) => {
    const response = await agents.agents(path, { method: 'POST', key: agentKey, body: JSON.stringify(body) });
    let received = '';
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    const done = (async () => {
      for (let next = await reader.read(); !next.done; next = await reader.read()) received += next.value;
    })();
    const until = async (pattern: RegExp) => {
      for (let waited = 0; waited < 30_000; waited += 50) {
        const match = pattern.exec(received);
        if (match) return match;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`${path}: nothing matched ${pattern}`);
    };
    return { turnId: response.headers.get('x-turn-id')!, done, until };
  };
  const approved = await start('/chat/stream/web:replay-approved', {
    message: `Plan and send ${call('update_plan', { steps: [{ title: 'Send', status: 'in_progress' }] })} ${call(
      'send_email',
      { to: 'replay@example.com', subject: 'Replay', body: 'Hello' },
    )}`,
    preferred_agents: [ops],
  });
  const [, approvalId] = await approved.until(/"type":"hitl_required","id":"([^"]+)"/);
  await agents.agents(`/chat/approvals/${approvalId}/approve`, { method: 'POST', key: agentKey });
  await approved.done;
  const expired = await start('/chat/stream/web:replay-expired', {
    message: call('send_email', { to: 'replay@example.com', subject: 'Late', body: 'Hello' }),
    preferred_agents: [ops],
  });
  await expired.done;
  const loop = await start('/chat/loop/web:replay-loop', { message: 'Draft it [[iterations 3]]', agent_id: 'writer' });
  await loop.done;
  capture(approved.turnId, 'agent-turn-approved');
  capture(expired.turnId, 'agent-turn-expired');
  capture(loop.turnId, 'agent-loop-continued');
  await agents.close();
  await smtp.close();
}

async function captureRoutedTurn(): Promise<void> {
  const agents = await startTestPlatform();
  const { key: agentKey } = await agents.createKey();
  const response = await agents.agents('/chat/stream/web:replay-routed', {
    method: 'POST',
    key: agentKey,
    body: JSON.stringify({ message: 'Translate good morning into French' }),
  });
  await response.text();
  // The answer ends before the turn's workflow task completes: the history is taken once the workflow has ended.
  const turnId = response.headers.get('x-turn-id')!;
  const connection = await Connection.connect({ address });
  await new Client({ connection }).workflow.getHandle(turnId).result();
  await connection.close();
  capture(turnId, `${label}agent-turn-routed`);
  await agents.close();
}
