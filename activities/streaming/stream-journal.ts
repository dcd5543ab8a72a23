/**
 * The stream journal (table stream_chunks): every event of a streamed completion, keyed (request_id, seq).
 * Writes are batched (one multi-row insert per `flushIntervalMs`) so the journal costs little per token;
 * `close()` flushes what is left before the provider call reports back to the workflow.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { SequencedStreamEvent, StreamEvent } from '../../common/completion.ts';

export interface JournalWriter {
  append(event: SequencedStreamEvent): void;
  close(): Promise<void>;
}

export class StreamJournal {
  private readonly orm: MikroORM;
  private readonly flushIntervalMs: number;

  constructor(orm: MikroORM, options: { flushIntervalMs?: number } = {}) {
    this.orm = orm;
    this.flushIntervalMs = options.flushIntervalMs ?? 100;
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
      close: async () => {
        if (timer) clearTimeout(timer);
        await flush();
      },
    };
  }

  /** Events after `afterSeq`, in order. */
  async read(requestId: string, afterSeq = -1): Promise<SequencedStreamEvent[]> {
    const rows = await this.orm.em
      .fork()
      .execute<Array<{ seq: number; data: string }>>(
        'select seq, data from stream_chunks where request_id = ? and seq > ? order by seq',
        [requestId, afterSeq],
      );
    return rows.map((row) => ({ seq: row.seq, event: JSON.parse(row.data) as StreamEvent }));
  }

  /** The event at one position, or null. */
  async at(requestId: string, seq: number): Promise<SequencedStreamEvent | null> {
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

  private async insert(requestId: string, batch: SequencedStreamEvent[]): Promise<void> {
    const placeholders = batch.map(() => '(?, ?, ?, now())').join(', ');
    const params = batch.flatMap((item) => [requestId, item.seq, JSON.stringify(item.event)]);
    // A re-executed attempt (after a worker crash) writes the same keys again: the first write wins.
    await this.orm.em
      .fork()
      .execute(
        `insert into stream_chunks (request_id, seq, data, created_at) values ${placeholders} on conflict do nothing`,
        params,
        'run',
      );
  }
}
