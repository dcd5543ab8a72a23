/**
 * A turn closed by its last model call (activities/conversations/turn-closer.ts), on a real PostgreSQL: the close
 * stores the turn's messages with the answer, ends the turn and journals `turn-done` with the turn's totals, and the
 * waiting response gets that event once the transaction commits. A call made again after a crash (its transaction
 * committed, its result not recorded) closes again: nothing changes.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import type { MikroORM } from '@mikro-orm/postgresql';
import { ConversationStore } from '../../activities/conversations/conversation-store.ts';
import { createTurnCloser } from '../../activities/conversations/turn-closer.ts';
import type { TurnClosing } from '../../activities/provider-calls.ts';
import { StreamHub } from '../../activities/streaming/stream-hub.ts';
import { StreamJournal } from '../../activities/streaming/stream-journal.ts';
import type { Candidate } from '../../common/completion.ts';
import { transaction } from '../../db/pool.ts';
import { cloneTestDatabase } from '../helpers/databases.ts';

let database: Awaited<ReturnType<typeof cloneTestDatabase>>;
let pool: pg.Pool;

beforeAll(async () => {
  database = await cloneTestDatabase();
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
});

afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

const candidate: Candidate = {
  model: 'gpt-4o-mini',
  creditRate: 2,
  provider: 'openai',
  upstreamModel: 'gpt-4o-mini-2024-07-18',
  tier: 'standard',
  price: { input_per_1m: 0.15, output_per_1m: 0.6 },
  probe: false,
};

it('closes the turn with the answer and its totals, and a second close changes nothing', async () => {
  const conversations = new ConversationStore(pool);
  // The journal's writes here go through its pool; it never reaches for the ORM.
  const journal = new StreamJournal(undefined as unknown as MikroORM, { pool });
  const hub = new StreamHub();
  const closer = createTurnCloser({ conversations, journal, hub });
  const { opened } = await conversations.openTurn(
    { owner: 'user:closer', key: 'api:closer', channel: 'api', agentId: null, message: 'What is 6 * 7?' },
    { after: async () => undefined },
  );
  const closing: TurnClosing = {
    target: { ...opened, channel: 'api' },
    sessionKey: 'api:closer',
    // A tool round before the last call: its assistant message and the tool's result.
    messages: [
      {
        role: 'assistant',
        content: null,
        toolCalls: [{ id: 'call_1', type: 'function', function: { name: 'calculator', arguments: '{}' } }],
      },
      { role: 'tool', content: '42', toolCallId: 'call_1', toolName: 'calculator' },
    ],
    firstSeq: 1,
    totals: {
      model: 'gpt-4o-mini',
      usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
      credits: 1,
      costUsd: 0,
    },
  };
  const call = {
    candidate,
    usage: { prompt_tokens: 120, completion_tokens: 5, total_tokens: 125 },
    metered: true,
    answer: 'It is 42.',
    seq: 9,
  };
  const heard: unknown[] = [];
  const subscription = hub.subscribe(opened.turnId);
  const listening = (async () => {
    for await (const item of subscription) {
      heard.push(item);
      break;
    }
  })();

  const close = () => transaction(pool, (client) => closer.close(client, closing, call));
  const afterCommit = await close();
  expect(heard).toEqual([]);
  afterCommit();
  await listening;
  const done = {
    type: 'turn-done',
    turnId: opened.turnId,
    sessionId: 'api:closer',
    model: 'gpt-4o-mini',
    usage: { prompt_tokens: 220, completion_tokens: 15, total_tokens: 235 },
    credits: 2,
    response: 'It is 42.',
  };
  expect(heard).toEqual([{ seq: 9, event: done }]);

  // Made again: the same rows, one journal event, the turn still done.
  (await close())();
  const messages = await conversations.history(opened.conversationId, opened.turn, undefined, true);
  expect(messages).toEqual([
    { role: 'user', content: 'What is 6 * 7?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'calculator', arguments: '{}' } }],
    },
    { role: 'tool', content: '42', tool_call_id: 'call_1' },
    { role: 'assistant', content: 'It is 42.' },
  ]);
  expect(await journal.read(opened.turnId)).toEqual([{ seq: 9, event: done }]);
  const { rows } = await pool.query<{ status: string }>('select status from chat_turns where id = $1', [opened.turnId]);
  expect(rows).toEqual([{ status: 'done' }]);
});
