/**
 * Stop reaching the process that runs the turn's step (activities/streaming/turn-stops.ts): two "processes", each
 * with its own listening connection (db/listener.ts) on a real PostgreSQL, as an API replica and a background worker
 * would be. A stop asked in one aborts the step watched in the other through NOTIFY, and a step that starts after the
 * stop ends at once; other turns are untouched.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { TurnStops } from '../../activities/streaming/turn-stops.ts';
import { PgListener } from '../../db/listener.ts';
import { createLogger } from '../../process/logger.ts';
import { cloneTestDatabase } from '../helpers/databases.ts';

let database: Awaited<ReturnType<typeof cloneTestDatabase>>;
const processes: Array<{ pool: pg.Pool; listener: PgListener; stops: TurnStops }> = [];

beforeAll(async () => {
  database = await cloneTestDatabase();
  for (let index = 0; index < 2; index++) {
    const pool = new pg.Pool({ connectionString: database.url, max: 2 });
    const listener = new PgListener(database.url, createLogger('test'));
    const stops = new TurnStops(pool);
    await stops.listen(listener);
    await listener.start();
    processes.push({ pool, listener, stops });
  }
});

afterAll(async () => {
  for (const { pool, listener } of processes) {
    await listener.close();
    await pool.end();
  }
  await database?.drop();
});

const aborted = (signal: AbortSignal) =>
  new Promise<void>((resolve) =>
    signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true }),
  );

it('aborts the step another process runs, remembers the stop for a step that starts after it, and nothing else', async () => {
  const [api, worker] = processes as [(typeof processes)[number], (typeof processes)[number]];
  const turn = `chat-conv_${randomUUID()}-1`;
  const other = `chat-conv_${randomUUID()}-1`;
  const running = worker.stops.watch(turn);
  const unrelated = worker.stops.watch(other);
  expect(running.signal.aborted).toBe(false);

  await api.stops.stop(turn);
  await aborted(running.signal);
  expect(unrelated.signal.aborted).toBe(false);

  // The next step of the stopped turn, in either process, does not start running.
  expect(worker.stops.watch(turn).signal.aborted).toBe(true);
  expect(api.stops.watch(turn).signal.aborted).toBe(true);
  expect(worker.stops.watch(`chat-conv_${randomUUID()}-2`).signal.aborted).toBe(false);
  running.release();
  unrelated.release();
});
