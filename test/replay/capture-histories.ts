/**
 * Captures workflow histories for the replay test: runs completions (plain, streamed, tool call, failover,
 * failure) against a throwaway platform and writes their histories to test/replay/histories/.
 * Needs TESSERA_TEST_DATABASE_URL with a migrated `tessera_test_template` (as npm test's global setup makes)
 * and a Temporal server at TEMPORAL_ADDRESS. Usage: node test/replay/capture-histories.ts
 */
import { writeFileSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { startTestPlatform } from '../helpers/platform.ts';

const platform = await startTestPlatform();
const { key } = await platform.createKey();
const openai = platform.openai(key);
const ids: Record<string, string> = {};
const messages = [{ role: 'user' as const, content: 'Replay me' }];

ids.plain = (await openai.chat.completions.create({ model: 'gpt-4o-mini', messages })).id;
for await (const chunk of await openai.chat.completions.create({ model: 'claude-haiku-4-5', messages, stream: true })) ids.streamed = chunk.id;
ids.tools = (
  await openai.chat.completions.create({
    model: 'gemini-2.5-flash',
    messages,
    tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }],
  })
).id;
await platform.simulator.addFault({ match: { model: 'gpt-4o-2024-11-20' }, fault: { status: 503 } });
ids.failover = (await openai.chat.completions.create({ model: 'gpt-4o', messages })).id;
await platform.simulator.addFault({ fault: { status: 500 } });
const failure = await openai.chat.completions.create({ model: 'deepseek-chat', messages }).catch((error: { headers?: Headers }) => error);
const failedId = (failure as { headers?: Headers }).headers?.get('x-request-id');
if (failedId) ids.failure = failedId;
await platform.simulator.clearFaults();

const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233' });
const client = new Client({ connection });
for (const [name, id] of Object.entries(ids)) {
  const history = await client.workflow.getHandle(`completion-${id}`).fetchHistory();
  writeFileSync(new URL(`./histories/completion-${name}.json`, import.meta.url), historyToJSON(history) + '\n');
  console.log(`captured completion-${name}`);
}
await connection.close();
await platform.close();
