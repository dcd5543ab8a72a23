/**
 * The stream journal (table stream_chunks): every event of a streamed completion, keyed (request_id, seq).
 * Writes are batched (one multi-row insert per `flushIntervalMs`) so the journal costs little per token;
 * `close()` flushes what is left before the provider call reports back to the workflow, in the same transaction as
 * the caller's own last write when it names one (a model call's settlement): a short answer is journalled and
 * charged in one commit.
 *
 * An outage of the database never cuts a stream: a writer keeps what the database has not taken and tries again until
 * it answers; what is still unwritten when the writer closes goes back to its caller (`JournalUnreachable`), and a
 * model call hands it to its workflow, which writes it once the database is back (docs/operations.md, "When a part
 * fails").
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
   * Writes what is left. With `alongside`, that write and `alongside`'s writes are one transaction; when the
   * transaction fails the events are written alone (the journal must hold them before the call reports back) and
   * `AlongsideFailed` is thrown, carrying `alongside`'s error. When the database does not take the events,
   * `JournalUnreachable` is thrown, carrying them. Any other error is the journal's own.
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
 * The database did not take a stream's last events when its writer closed (an outage: its cause says which). They
 * are in `unwritten`, in order, for a durable step to write once the database answers: a model call hands them to its
 * workflow, whose history keeps them meanwhile (workflows/model-call.ts). Every other caller's step fails with it as
 * the store outage it is, and is retried.
 */
export class JournalUnreachable extends Error {
  readonly unwritten: SequencedStreamEvent[];
  constructor(requestId: string, unwritten: SequencedStreamEvent[], cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`the stream journal of ${requestId} could not take ${unwritten.length} event(s): ${reason}`, { cause });
    this.unwritten = unwritten;
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

/** A writer's back-off between tries while the database is out (doubling from the first to the last). */
const outageBackoffMs = { first: 200, last: 5_000 };
/**
 * How long a closing writer waits for the database: a write under way, then its own tries. A blip (a dropped pooled
 * connection, a server restarting) passes within it; a longer outage is handed over (`JournalUnreachable`) rather than
 * waited out inside the call, whose own limit it would otherwise meet.
 */
const closeWaitMs = 2_000;

export class StreamJournal {
  private readonly orm: MikroORM;
  private readonly pool: Pool | null;
  private readonly flushIntervalMs: number;

  constructor(orm: MikroORM, options: { flushIntervalMs?: number; pool?: Pool } = {}) {
    this.orm = orm;
    this.pool = options.pool ?? null;
    this.flushIntervalMs = options.flushIntervalMs ?? 100;
  }

  /**
   * A stream's writer. Events are written a batch per `flushIntervalMs`, in order; while the database is out they are
   * kept and tried again (backing off) until it answers or the writer closes, so an outage of any length never cuts
   * the stream: what the database has not taken by the close goes to the caller in `JournalUnreachable`.
   */
  writer(requestId: string): JournalWriter {
    /** Appended and not yet known to be written, oldest first. */
    let unwritten: SequencedStreamEvent[] = [];
    let timer: NodeJS.Timeout | null = null;
    let writing: Promise<void> = Promise.resolve();
    let closing = false;
    /** Cuts an outage's back-off short when the writer closes. */
    let wake: (() => void) | null = null;
    /** A failure that is not an outage: the journal's own, thrown by `close`. */
    let failure: { error: unknown } | null = null;

    /** A write (or its outage back-off) is under way. */
    let busy = false;
    const writeUnwritten = async () => {
      busy = true;
      try {
        await writeAll();
      } finally {
        busy = false;
      }
    };
    const writeAll = async () => {
      for (let delayMs = outageBackoffMs.first; unwritten.length > 0 && !failure;) {
        const count = unwritten.length;
        try {
          await this.insert(requestId, unwritten.slice(0, count));
          // The close may have taken the events meanwhile (and written them again: the insert is idempotent).
          if (!closing) unwritten = unwritten.slice(count);
          return;
        } catch (error) {
          if (!isStoreOutage(error)) {
            failure = { error };
            return;
          }
          if (closing) return;
          await new Promise<void>((resolve) => {
            const backoff = setTimeout(resolve, delayMs);
            wake = () => {
              clearTimeout(backoff);
              resolve();
            };
          });
          wake = null;
          delayMs = Math.min(delayMs * 2, outageBackoffMs.last);
        }
      }
    };
    const flush = () => {
      timer = null;
      writing = writing.then(writeUnwritten);
    };
    /** What is left when the writer closes: waits for a write under way, within `closeWaitMs`. */
    const takeRest = async () => {
      if (timer) clearTimeout(timer);
      timer = null;
      closing = true;
      wake?.();
      if (busy) {
        // A write under way: waited for, within closeWaitMs (its events are in `unwritten` until it succeeds).
        const patience = new AbortController();
        await Promise.race([
          writing,
          sleep(closeWaitMs, undefined, { signal: patience.signal }).catch(() => undefined),
        ]);
        patience.abort();
      }
      if (failure) throw failure.error;
      const rest = unwritten;
      unwritten = [];
      return rest;
    };
    return {
      append: (event) => {
        unwritten.push(event);
        timer ??= setTimeout(flush, this.flushIntervalMs);
      },
      close: async (alongside) => {
        const rest = await takeRest();
        if (!alongside) {
          await this.insertClosing(requestId, rest);
          return;
        }
        if (!this.pool) {
          // A journal built without the pool (tests reading it) cannot share a transaction: the caller's write is
          // left to the caller's own retry.
          await this.insertClosing(requestId, rest);
          throw new AlongsideFailed(new Error('this journal has no pool to share a transaction on'));
        }
        try {
          await transaction(this.pool, async (client) => {
            await this.write(client, requestId, rest);
            await alongside(client);
          });
        } catch (error) {
          await this.insertClosing(requestId, rest);
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

  /** Events after `afterSeq`, as `read`, or null while the database is out: a follower polls again later. */
  async poll(requestId: string, afterSeq = -1): Promise<SequencedStreamEvent[] | null> {
    try {
      return await this.read(requestId, afterSeq);
    } catch (error) {
      if (isStoreOutage(error)) return null;
      throw error;
    }
  }

  /** Writes events on the pool (a step that writes what a closing writer could not: idempotent). */
  async insert(requestId: string, events: SequencedStreamEvent[]): Promise<void> {
    if (events.length === 0) return;
    if (this.pool) {
      await this.write(this.pool, requestId, events);
      return;
    }
    const placeholders = events.map(() => '(?, ?, ?, now())').join(', ');
    const params = events.flatMap((item) => [requestId, item.seq, JSON.stringify(item.event)]);
    await this.orm.em
      .fork()
      .execute(
        `insert into stream_chunks (request_id, seq, data, created_at) values ${placeholders} on conflict do nothing`,
        params,
        'run',
      );
  }

  /** A closing writer's last write: tried within `closeWaitMs` while the database is out, then handed over. */
  private async insertClosing(requestId: string, events: SequencedStreamEvent[]): Promise<void> {
    const deadline = Date.now() + closeWaitMs;
    for (let delayMs = outageBackoffMs.first; ; delayMs *= 2) {
      try {
        await this.insert(requestId, events);
        return;
      } catch (error) {
        if (!isStoreOutage(error)) throw error;
        if (Date.now() + delayMs > deadline) throw new JournalUnreachable(requestId, events, error);
        await sleep(delayMs);
      }
    }
  }
}
