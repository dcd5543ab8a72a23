/**
 * Captures workflow histories for the replay test: runs completions (plain, streamed, tool call, failover,
 * failure) against a throwaway platform and writes their histories to test/replay/histories/.
 * Sets up Temporal and PostgreSQL like `npm test` does. Usage: node test/replay/capture-histories.ts [label]
 * The label prefixes the file names (e.g. `metered`): keep earlier captures while workflows like them may still run.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { ensureTemporalCli } from '../../scripts/lib/temporal-cli.ts';
import globalSetup from '../helpers/global-setup.ts';
import globalTeardown from '../helpers/global-teardown.ts';
import { startTestPlatform } from '../helpers/platform.ts';

const label = process.argv[2] ? `${process.argv[2]}-` : '';
await globalSetup();

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
const cli = await ensureTemporalCli();
for (const [name, id] of Object.entries(ids)) {
  const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  const history = execFileSync(cli, [
    'workflow',
    'show',
    '--address',
    address,
    '-w',
    `completion-${id}`,
    '--output',
    'json',
  ]);
  writeFileSync(new URL(`./histories/${label}completion-${name}.json`, import.meta.url), history);
  console.log(`captured ${label}completion-${name}`);
}
await platform.close();
await globalTeardown();
