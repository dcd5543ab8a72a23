/**
 * The stream journal (table stream_chunks): every event of a streamed completion, keyed (request_id, seq).
 * Writes are batched (one multi-row insert per `flushIntervalMs`) so the journal costs little per token;
 * `close()` flushes what is left before the provider call reports back to the workflow, in the same transaction as
 * the caller's own last write when it names one (a model call's settlement): a short answer is journalled and
 * charged in one commit.
 *
 * With the hot-path `pg` pool (every process's worker builds it so) the journal's statements are prepared ones, and
 * `write` puts events in the caller's transaction (a turn's opening or close writes its events with its rows).
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { PoolClient } from 'pg';
import type { SequencedStreamEvent, StreamEvent } from '../../common/completion.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { isStoreOutage } from '../../db/errors.ts';
import { run, transaction, type Pool, type Queryable } from '../../db/pool.ts';

export interface JournalWriter {
  append(event: SequencedStreamEvent): void;
  /**
   * Flushes what is left. With `alongside`, that flush and `alongside`'s writes are one transaction; when the
   * transaction fails the events are written alone (the journal must hold them before the call reports back) and
   * `AlongsideFailed` is thrown, carrying `alongside`'s error. Any other error is the journal's own.
   */
  close(alongside?: (client: PoolClient) => Promise<void>): Promise<void>;
}

/** The write that shared a journal flush's transaction failed; the events were journalled on their own. */
export class AlongsideFailed extends Error {
  readonly reason: unknown;
  constructor(reason: unknown) {
    super(`the write beside the journal's flush failed: ${reason instanceof Error ? reason.message : String(reason)}`);
    this.reason = reason;
  }
}

/**
 * The journal's insert: one statement for any number of events (arrays), so it is prepared once per connection. A
 * re-executed attempt (after a worker crash) writes the same keys again: the first write wins.
 */
const insertStatement = {
  name: 'journal-insert',
  text: `insert into stream_chunks (request_id, seq, data, created_at)
         select $1::text, event.seq, event.data, now() from unnest($2::int[], $3::text[]) as event(seq, data)
         on conflict do nothing`,
};

const readStatement = {
  name: 'journal-read',
  text: 'select seq, data from stream_chunks where request_id = $1 and seq > $2 order by seq',
};

const atStatement = {
  name: 'journal-at',
  text: 'select data from stream_chunks where request_id = $1 and seq = $2',
};

export class StreamJournal {
  private readonly orm: MikroORM;
  private readonly pool: Pool | null;
  private readonly flushIntervalMs: number;
  private readonly outageWaitMs: number;

  constructor(orm: MikroORM, options: { flushIntervalMs?: number; pool?: Pool; outageWaitMs?: number } = {}) {
    this.orm = orm;
    this.pool = options.pool ?? null;
    this.flushIntervalMs = options.flushIntervalMs ?? 100;
    this.outageWaitMs = options.outageWaitMs ?? 60_000;
  }

  writer(requestId: string): JournalWriter {
    let pending: SequencedStreamEvent[] = [];
    let timer: NodeJS.Timeout | null = null;
    let writing: Promise<void> = Promise.resolve();
    const flush = () => {
      timer = null;
      if (pending.length === 0) return writing;
      const batch = pending;
      pending = [];
      writing = writing.then(() => this.insert(requestId, batch));
      return writing;
    };
    return {
      append: (event) => {
        pending.push(event);
        timer ??= setTimeout(() => void flush().catch(() => undefined), this.flushIntervalMs);
      },
      close: async (alongside) => {
        if (timer) clearTimeout(timer);
        timer = null;
        if (!alongside) {
          await flush();
          return;
        }
        if (!this.pool) {
          // A journal built without the pool (tests reading it) cannot share a transaction: the caller's write is
          // left to the caller's own retry.
          await flush();
          throw new AlongsideFailed(new Error('this journal has no pool to share a transaction on'));
        }
        // Earlier batches first (in order), then the rest with the caller's write.
        await writing;
        const batch = pending;
        pending = [];
        try {
          await transaction(this.pool, async (client) => {
            if (batch.length) await this.write(client, requestId, batch);
            await alongside(client);
          });
        } catch (error) {
          if (batch.length) await this.insert(requestId, batch);
          throw new AlongsideFailed(error);
        }
      },
    };
  }

  /** Writes events on `executor`: the pool, or the client of a transaction the caller runs. */
  async write(executor: Queryable, requestId: string, events: SequencedStreamEvent[]): Promise<void> {
    if (events.length === 0) return;
    await run(executor, insertStatement, [
      requestId,
      events.map((item) => item.seq),
      events.map((item) => JSON.stringify(item.event)),
    ]);
  }

  /** Events after `afterSeq`, in order. */
  async read(requestId: string, afterSeq = -1): Promise<SequencedStreamEvent[]> {
    const rows = this.pool
      ? await run<{ seq: number; data: string }>(this.pool, readStatement, [requestId, afterSeq])
      : await this.orm.em
          .fork()
          .execute<Array<{ seq: number; data: string }>>(
            'select seq, data from stream_chunks where request_id = ? and seq > ? order by seq',
            [requestId, afterSeq],
          );
    return rows.map((row) => ({ seq: row.seq, event: JSON.parse(row.data) as StreamEvent }));
  }

  /** The event at one position, or null. */
  async at(requestId: string, seq: number): Promise<SequencedStreamEvent | null> {
    if (this.pool) {
      const [row] = await run<{ data: string }>(this.pool, atStatement, [requestId, seq]);
      return row ? { seq, event: JSON.parse(row.data) as StreamEvent } : null;
    }
    const rows = await this.orm.em
      .fork()
      .execute<Array<{ data: string }>>('select data from stream_chunks where request_id = ? and seq = ?', [
        requestId,
        seq,
      ]);
    return rows[0] ? { seq, event: JSON.parse(rows[0].data) as StreamEvent } : null;
  }

  /** Deletes a request's events (embedding vectors, once their caller has read them). */
  async remove(requestId: string): Promise<void> {
    await this.orm.em.fork().execute('delete from stream_chunks where request_id = ?', [requestId], 'run');
  }

  /**
   * Inserts a batch, waiting out an outage of the database for up to `outageWaitMs` (60 s): the insert is idempotent,
   * and a stream whose journal gave up at the first refused connection failed its request for good after it had
   * reached its client (the fault bench's PostgreSQL kill). Later batches queue behind it, in order.
   */
  private async insert(requestId: string, batch: SequencedStreamEvent[]): Promise<void> {
    const deadline = Date.now() + this.outageWaitMs;
    for (let delayMs = 200; ; delayMs = Math.min(delayMs * 2, 5_000)) {
      try {
        await this.insertOnce(requestId, batch);
        return;
      } catch (error) {
        if (!isStoreOutage(error) || Date.now() + delayMs > deadline) throw error;
        await sleep(delayMs);
      }
    }
  }

  private async insertOnce(requestId: string, batch: SequencedStreamEvent[]): Promise<void> {
    if (this.pool) {
      await this.write(this.pool, requestId, batch);
      return;
    }
    const placeholders = batch.map(() => '(?, ?, ?, now())').join(', ');
    const params = batch.flatMap((item) => [requestId, item.seq, JSON.stringify(item.event)]);
    await this.orm.em
      .fork()
      .execute(
        `insert into stream_chunks (request_id, seq, data, created_at) values ${placeholders} on conflict do nothing`,
        params,
        'run',
      );
  }
}
