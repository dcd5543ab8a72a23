/**
 * The gateway's batches (`/v1/batches`, OpenAI's Batch API): rows in `batches` and one per request in `batch_lines`
 * (db/entities/batch.entity.ts). The API creates a batch, reads it and asks for its cancel; the batch's workflow
 * (workflows/batch.workflow.ts) takes its lines from the input file, records each line's answer once with the batch's
 * counts, and writes the output and error files at its end.
 *
 * Once: a line's answer is written `where status_code is null`, and the counts move only when it was; the output and
 * error files have ids made from the batch's, so writing them again replaces them. Every read by a client names the
 * owner: another user's batch is answered as one that does not exist.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { finished } from 'node:stream/promises';
import { transaction, type Pool } from '../../db/pool.ts';
import type { BatchEnding, BatchEndpoint, BatchStatus } from '../../common/batches.ts';
import type { ApiFileStore } from '../files/api-files.ts';

export interface BatchError {
  code: string;
  message: string;
  param: string | null;
  line: number | null;
}

export interface BatchRecord {
  id: string;
  userId: string;
  endpoint: BatchEndpoint;
  inputFileId: string;
  completionWindow: string;
  status: BatchStatus;
  metered: boolean;
  metadata: Record<string, string> | null;
  errors: BatchError[] | null;
  outputFileId: string | null;
  errorFileId: string | null;
  total: number;
  completed: number;
  failed: number;
  inputTokens: number;
  outputTokens: number;
  createdAt: Date;
  expiresAt: Date;
  inProgressAt: Date | null;
  finalizingAt: Date | null;
  completedAt: Date | null;
  failedAt: Date | null;
  expiredAt: Date | null;
  cancellingAt: Date | null;
  cancelledAt: Date | null;
  /** Lines that found no capacity and wait to run again (`waiting`), since when, and the model the last one asked. */
  linesWaiting: number;
  waitingSince: Date | null;
  waitingModel: string | null;
}

interface Row {
  id: string;
  user_id: string;
  endpoint: BatchEndpoint;
  input_file_id: string;
  completion_window: string;
  status: BatchStatus;
  metered: boolean;
  metadata: Record<string, string> | null;
  errors: BatchError[] | null;
  output_file_id: string | null;
  error_file_id: string | null;
  total: number;
  completed: number;
  failed: number;
  input_tokens: string | number;
  output_tokens: string | number;
  created_at: Date;
  expires_at: Date;
  in_progress_at: Date | null;
  finalizing_at: Date | null;
  completed_at: Date | null;
  failed_at: Date | null;
  expired_at: Date | null;
  cancelling_at: Date | null;
  cancelled_at: Date | null;
  lines_waiting: number;
  waiting_since: Date | null;
  waiting_model: string | null;
}

const toRecord = (row: Row): BatchRecord => ({
  id: row.id,
  userId: row.user_id,
  endpoint: row.endpoint,
  inputFileId: row.input_file_id,
  completionWindow: row.completion_window,
  status: row.status,
  metered: row.metered,
  metadata: row.metadata,
  errors: row.errors,
  outputFileId: row.output_file_id,
  errorFileId: row.error_file_id,
  total: row.total,
  completed: row.completed,
  failed: row.failed,
  inputTokens: Number(row.input_tokens),
  outputTokens: Number(row.output_tokens),
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  inProgressAt: row.in_progress_at,
  finalizingAt: row.finalizing_at,
  completedAt: row.completed_at,
  failedAt: row.failed_at,
  expiredAt: row.expired_at,
  cancellingAt: row.cancelling_at,
  cancelledAt: row.cancelled_at,
  linesWaiting: row.lines_waiting,
  waitingSince: row.waiting_since,
  waitingModel: row.waiting_model,
});

/** A line as its run needs it, with what its batch says now. */
export interface BatchLineRow {
  customId: string;
  body: Record<string, unknown>;
  statusCode: number | null;
  batchStatus: BatchStatus;
  /** The batch's window has passed: the line is not run. */
  expired: boolean;
  userId: string;
  metered: boolean;
  endpoint: BatchEndpoint;
}

/** A line's answer: the endpoint's body with its status (200), or an error body with the error's status. */
export interface BatchLineAnswer {
  statusCode: number;
  requestId: string;
  body: unknown;
  usage?: { inputTokens: number; outputTokens: number };
}

/** Checks one line of the input file against the batch's endpoint: null when it may run, else why not. */
export type LineCheck = (
  endpoint: BatchEndpoint,
  request: { url: string; body: unknown },
) => { message: string; param: string | null } | null;

/** Lines inserted per statement while a batch is loaded, and read per page while its files are written. */
const pageSize = 500;
/** At most this many invalid lines are named in a batch's `errors`. */
const maxErrors = 100;

const endingColumn: Record<BatchEnding, string> = {
  completed: 'completed_at',
  expired: 'expired_at',
  cancelled: 'cancelled_at',
};

export class BatchStore {
  private readonly pool: Pool;

  constructor(pool: Pool) {
    this.pool = pool;
  }

  async create(
    userId: string,
    batch: {
      endpoint: BatchEndpoint;
      inputFileId: string;
      completionWindow: string;
      metadata: Record<string, string> | null;
      metered: boolean;
      windowSeconds: number;
    },
  ): Promise<BatchRecord> {
    const id = `batch_${randomBytes(16).toString('hex')}`;
    const { rows } = await this.pool.query<Row>(
      `insert into batches (id, user_id, endpoint, input_file_id, completion_window, status, metered, metadata,
                            created_at, expires_at)
       values ($1, $2, $3, $4, $5, 'validating', $6, $7, now(), now() + make_interval(secs => $8))
       returning *`,
      [
        id,
        userId,
        batch.endpoint,
        batch.inputFileId,
        batch.completionWindow,
        batch.metered,
        batch.metadata,
        batch.windowSeconds,
      ],
    );
    return toRecord(rows[0]!);
  }

  /** Takes back a batch whose workflow could not be started (nothing of it ran). */
  async remove(id: string): Promise<void> {
    await this.pool.query('delete from batches where id = $1', [id]);
  }

  async get(userId: string, id: string): Promise<BatchRecord | null> {
    const { rows } = await this.pool.query<Row>('select * from batches where id = $1 and user_id = $2', [id, userId]);
    return rows[0] ? toRecord(rows[0]) : null;
  }

  /** The caller's batches, newest first, after the batch `after`, at most `limit`. */
  async list(userId: string, query: { after?: string; limit: number }) {
    const { rows } = await this.pool.query<Row>(
      `select * from batches
       where user_id = $1
         and ($2::text is null or (created_at, id) < (select created_at, id from batches where id = $2 and user_id = $1))
       order by created_at desc, id desc
       limit $3`,
      [userId, query.after ?? null, query.limit + 1],
    );
    return { batches: rows.slice(0, query.limit).map(toRecord), hasMore: rows.length > query.limit };
  }

  /**
   * Marks the caller's batch `cancelling` when it still runs (validating or in progress) and answers it as it is now;
   * null when it is not the caller's. Its workflow hears of it by signal, and every line it starts reads the status.
   */
  async cancel(userId: string, id: string): Promise<{ batch: BatchRecord; changed: boolean } | null> {
    const { rows } = await this.pool.query<Row>(
      `update batches set status = 'cancelling', cancelling_at = now()
       where id = $1 and user_id = $2 and status in ('validating', 'in_progress') returning *`,
      [id, userId],
    );
    if (rows[0]) return { batch: toRecord(rows[0]), changed: true };
    const batch = await this.get(userId, id);
    return batch ? { batch, changed: false } : null;
  }

  /**
   * Takes the batch's lines from its input file into `batch_lines`, each checked by `check`; moves it to
   * `in_progress` and answers how many lines it has. When a line does not fit the endpoint (or the file is gone), the
   * batch is `failed` with the lines at fault named in `errors`, and null is answered. Idempotent: a line already
   * taken is kept as it is.
   */
  async load(batchId: string, files: ApiFileStore, check: LineCheck): Promise<number | null> {
    const batch = await this.byId(batchId);
    if (batch.status !== 'validating') return batch.status === 'failed' ? null : batch.total;
    const opened = await files.open(batch.userId, batch.inputFileId);
    if (!opened) {
      return this.fail(batchId, [
        {
          code: 'invalid_file',
          message: `The input file ${batch.inputFileId} is gone`,
          param: 'input_file_id',
          line: null,
        },
      ]);
    }
    const errors: BatchError[] = [];
    let pending: Array<{ line: number; customId: string; body: unknown }> = [];
    let line = 0;
    const flush = async () => {
      if (pending.length === 0 || errors.length > 0) return;
      await this.pool.query(
        `insert into batch_lines (batch_id, line, custom_id, body)
         select $1, line, custom_id, body from unnest($2::int[], $3::text[], $4::jsonb[]) as t(line, custom_id, body)
         on conflict do nothing`,
        [
          batchId,
          pending.map((item) => item.line),
          pending.map((item) => item.customId),
          pending.map((item) => JSON.stringify(item.body)),
        ],
      );
      pending = [];
    };
    const lines = createInterface({ input: opened.stream, crlfDelay: Infinity });
    for await (const text of lines) {
      line += 1;
      // The file was checked line by line when it was taken (activities/files/api-files.ts): each is a request.
      const request = JSON.parse(text) as { custom_id: string; url: string; body: unknown };
      const fault = check(batch.endpoint, request);
      if (fault) {
        if (errors.length < maxErrors) errors.push({ code: 'invalid_request', ...fault, line });
        continue;
      }
      pending.push({ line, customId: request.custom_id, body: request.body });
      if (pending.length >= pageSize) await flush();
    }
    if (errors.length > 0) return this.fail(batchId, errors);
    await flush();
    await this.pool.query(
      `update batches set status = 'in_progress', in_progress_at = now(), total = $2
       where id = $1 and status = 'validating'`,
      [batchId, line],
    );
    return line;
  }

  private async fail(batchId: string, errors: BatchError[]): Promise<null> {
    await transaction(this.pool, async (client) => {
      await client.query('delete from batch_lines where batch_id = $1', [batchId]);
      await client.query(
        `update batches set status = 'failed', failed_at = now(), errors = $2 where id = $1 and status = 'validating'`,
        [batchId, JSON.stringify(errors)],
      );
    });
    return null;
  }

  /** A line and what its batch says now. */
  async line(batchId: string, line: number): Promise<BatchLineRow> {
    const { rows } = await this.pool.query<{
      custom_id: string;
      body: Record<string, unknown>;
      status_code: number | null;
      status: BatchStatus;
      user_id: string;
      metered: boolean;
      endpoint: BatchEndpoint;
      expired: boolean;
    }>(
      `select l.custom_id, l.body, l.status_code, b.status, b.user_id, b.metered, b.endpoint,
              b.expires_at <= now() as expired
       from batch_lines l join batches b on b.id = l.batch_id
       where l.batch_id = $1 and l.line = $2`,
      [batchId, line],
    );
    const row = rows[0];
    if (!row) throw new Error(`Batch ${batchId} has no line ${line}`);
    return {
      customId: row.custom_id,
      body: row.body,
      statusCode: row.status_code,
      batchStatus: row.status,
      expired: row.expired,
      userId: row.user_id,
      metered: row.metered,
      endpoint: row.endpoint,
    };
  }

  /**
   * A line found no capacity and waits in its batch's workflow to run again: counted once among the batch's waiting
   * lines (the line's own mark makes a repeat, or a re-executed step, count nothing more), with the model it asked for.
   */
  async waiting(batchId: string, line: number, model: string | null): Promise<void> {
    await this.pool.query(
      `with marked as (
         update batch_lines set waiting_since = now()
         where batch_id = $1 and line = $2 and waiting_since is null and status_code is null
         returning 1
       )
       update batches set lines_waiting = lines_waiting + 1, waiting_since = coalesce(waiting_since, now()),
                          waiting_model = coalesce($3, waiting_model)
       where id = $1 and exists (select 1 from marked)`,
      [batchId, line, model],
    );
  }

  /**
   * Writes a line's answer once, and moves its batch's counts (and usage) with it, a line that waited leaving the
   * waiting ones; false when it was written before.
   */
  async record(batchId: string, line: number, answer: BatchLineAnswer): Promise<boolean> {
    const { rows } = await this.pool.query<{ recorded: boolean }>(
      `with before as (
         select (waiting_since is not null)::int as waited from batch_lines where batch_id = $1 and line = $2
       ), written as (
         update batch_lines set status_code = $3, request_id = $4, response = $5, done_at = now(), waiting_since = null
         where batch_id = $1 and line = $2 and status_code is null
         returning status_code
       ), counted as (
         update batches set completed = completed + (case when $3 = 200 then 1 else 0 end),
                            failed = failed + (case when $3 = 200 then 0 else 1 end),
                            input_tokens = input_tokens + $6, output_tokens = output_tokens + $7,
                            lines_waiting = greatest(0, lines_waiting - (select waited from before)),
                            waiting_since = case when lines_waiting - (select waited from before) > 0
                                                 then waiting_since end
         where id = $1 and exists (select 1 from written)
       )
       select exists (select 1 from written) as recorded`,
      [
        batchId,
        line,
        answer.statusCode,
        answer.requestId,
        JSON.stringify(answer.body),
        answer.usage?.inputTokens ?? 0,
        answer.usage?.outputTokens ?? 0,
      ],
    );
    return rows[0]!.recorded;
  }

  /** `finalizing`, before a completed batch's files are written. */
  async finalizing(batchId: string): Promise<void> {
    await this.pool.query(
      `update batches set status = 'finalizing', finalizing_at = coalesce(finalizing_at, now())
       where id = $1 and status = 'in_progress'`,
      [batchId],
    );
  }

  /**
   * Writes the batch's output file (every line answered 200) and error file (every other answer, and, when the batch
   * expired or was cancelled, every line not run, with `batch_expired` or `batch_cancelled`), in line order, through
   * the Files API's store, and ends the batch with them. Retried, it writes the same files again under the same ids.
   */
  async finish(batchId: string, ending: BatchEnding, files: ApiFileStore): Promise<void> {
    const batch = await this.byId(batchId);
    const directory = await mkdtemp(join(tmpdir(), 'tessera-batch-'));
    try {
      const output = new JsonlFile(join(directory, 'output.jsonl'));
      const errors = new JsonlFile(join(directory, 'errors.jsonl'));
      const notRun =
        ending === 'expired'
          ? {
              code: 'batch_expired',
              message: 'This request could not be executed before the completion window expired.',
            }
          : { code: 'batch_cancelled', message: 'This request was not executed: the batch was cancelled.' };
      let after = 0;
      for (;;) {
        const { rows } = await this.pool.query<{
          line: number;
          custom_id: string;
          status_code: number | null;
          request_id: string | null;
          response: unknown;
        }>(
          `select line, custom_id, status_code, request_id, response from batch_lines
           where batch_id = $1 and line > $2 order by line limit $3`,
          [batchId, after, pageSize],
        );
        for (const row of rows) {
          const id = `${batchId.replace(/^batch_/, 'batch_req_')}_${row.line}`;
          if (row.status_code === null) {
            await errors.write({ id, custom_id: row.custom_id, response: null, error: notRun });
            continue;
          }
          const entry = {
            id,
            custom_id: row.custom_id,
            response: { status_code: row.status_code, request_id: row.request_id, body: row.response },
            error: null,
          };
          await (row.status_code === 200 ? output : errors).write(entry);
        }
        if (rows.length < pageSize) break;
        after = rows.at(-1)!.line;
      }
      const kept = async (file: JsonlFile, suffix: string) => {
        const written = await file.close();
        if (written.lines === 0) return null;
        const record = await files.keep(batch.userId, {
          id: `file-${batchId}-${suffix}`,
          path: file.path,
          bytes: written.bytes,
          filename: `${batchId}_${suffix}.jsonl`,
          purpose: 'batch_output',
          lineCount: written.lines,
        });
        return record.id;
      };
      const outputFileId = await kept(output, 'output');
      const errorFileId = await kept(errors, 'error');
      await this.pool.query(
        `update batches set status = $2, ${endingColumn[ending]} = coalesce(${endingColumn[ending]}, now()),
                            output_file_id = $3, error_file_id = $4, lines_waiting = 0, waiting_since = null
         where id = $1`,
        [batchId, ending, outputFileId, errorFileId],
      );
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }

  private async byId(batchId: string): Promise<BatchRecord> {
    const { rows } = await this.pool.query<Row>('select * from batches where id = $1', [batchId]);
    if (!rows[0]) throw new Error(`No batch ${batchId}`);
    return toRecord(rows[0]);
  }
}

/** A JSONL file written one object per line, counting its lines and bytes. */
class JsonlFile {
  readonly path: string;
  private readonly stream;
  private lines = 0;
  private bytes = 0;

  constructor(path: string) {
    this.path = path;
    this.stream = createWriteStream(path);
  }

  async write(value: unknown): Promise<void> {
    const text = `${JSON.stringify(value)}\n`;
    this.lines += 1;
    this.bytes += Buffer.byteLength(text);
    if (!this.stream.write(text)) await new Promise<void>((resolve) => this.stream.once('drain', () => resolve()));
  }

  async close(): Promise<{ lines: number; bytes: number }> {
    this.stream.end();
    await finished(this.stream);
    return { lines: this.lines, bytes: this.bytes };
  }
}
