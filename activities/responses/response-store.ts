/**
 * The Responses door's rows (`model_responses`, db/entities/model-response.entity.ts), for the API and for the
 * workflow of each response. The API creates a row before the response's workflow starts and reads, chains and
 * deletes rows; the workflow moves a background one to `in_progress`; its end is written by its model call with the
 * call's settlement (activities/provider-calls.ts, `closeResponse`: riding in the settlement's statement when nothing
 * was streamed, `settledEnd`, else in the transaction of the settlement and the journal's last batch), or, when the
 * call could not (it failed, or that write did), by the workflow (`createResponseActivities`, local activities of the
 * completion workflow, retried until the database answers). Every end is written only from `queued` or
 * `in_progress`: a response ends one way, whichever write comes twice.
 */
import { run, type Pool, type Queryable } from '../../db/pool.ts';
import type { AdmittedWrite, SettledWrite } from '../credits/credit-ledger.ts';
import type { Usage } from '../../common/chat.ts';
import type { CompletionMessage } from '../../common/completion.ts';
import { finishedStatus, outputItems, responseUsage, type ResponseRow } from '../../common/responses.ts';

export type { ResponseRow };

export type NewResponse = Omit<
  ResponseRow,
  'servedModel' | 'output' | 'usage' | 'error' | 'incompleteDetails' | 'createdAt' | 'completedAt'
>;

/** How a response ended, as its workflow records it. */
export type ResponseEnd =
  | {
      responseId: string;
      outcome: 'answered';
      model: string;
      message: CompletionMessage | null;
      finishReason: Parameters<typeof finishedStatus>[0];
      usage: Usage;
      stopped: boolean;
    }
  | { responseId: string; outcome: 'failed'; code: string; message: string }
  | { responseId: string; outcome: 'cancelled' };

const columns = `id, user_id as "userId", status, background, stream, model, served_model as "servedModel",
  previous_response_id as "previousResponseId", instructions, request, input_items as "inputItems", output, usage,
  error, incomplete_details as "incompleteDetails", created_at as "createdAt", completed_at as "completedAt"`;

const insertColumns = `id, user_id, status, background, stream, model, previous_response_id, instructions, request,
  input_items, created_at`;

function insertValues(row: NewResponse): unknown[] {
  return [
    row.id,
    row.userId,
    row.status,
    row.background,
    row.stream,
    row.model,
    row.previousResponseId,
    row.instructions,
    JSON.stringify(row.request),
    JSON.stringify(row.inputItems),
  ];
}

/** How deep a chain of `previous_response_id` is followed. */
export const maxChainLength = 100;

export class ResponseStore {
  private readonly pool: Pool;

  constructor(pool: Pool) {
    this.pool = pool;
  }

  async create(row: NewResponse, executor: Queryable = this.pool): Promise<void> {
    await executor.query(
      `insert into model_responses (${insertColumns})
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now())
       on conflict (id) do nothing`,
      insertValues(row),
    );
  }

  /**
   * The row's insert as a write that rides in the API's admission statement (activities/credits/credit-ledger.ts,
   * `AdmittedWrite`): written exactly when the request's credits are held, in that one statement and commit instead of
   * a transaction of its own.
   */
  admitted(row: NewResponse): AdmittedWrite {
    return {
      name: 'response-row',
      cte: (first) => {
        const [id, user, status, background, stream, model, previous, instructions, request, input] = Array.from(
          { length: 10 },
          (_, offset) => `$${first + offset}`,
        );
        return `response_row as (
          insert into model_responses (${insertColumns})
          select ${id}::text, ${user}::text, ${status}::text, ${background}::boolean, ${stream}::boolean,
            ${model}::text, ${previous}::text, ${instructions}::text, ${request}::jsonb, ${input}::jsonb, now()
          from entry
          on conflict (id) do nothing)`;
      },
      values: insertValues(row),
      alone: () => this.create(row),
    };
  }

  /** The caller's response, or null (another user's is null too). */
  async get(userId: string, id: string): Promise<ResponseRow | null> {
    const { rows } = await this.pool.query<ResponseRow>(
      `select ${columns} from model_responses where id = $1 and user_id = $2`,
      [id, userId],
    );
    return rows[0] ?? null;
  }

  /**
   * The conversation a new response continues: `previousId` and the responses it continued, oldest first (at most
   * `maxChainLength`), the caller's only.
   */
  async chain(userId: string, previousId: string): Promise<ResponseRow[]> {
    const { rows } = await this.pool.query<ResponseRow & { depth: number }>(
      `with recursive chain as (
         select r.*, 0 as depth from model_responses r where r.id = $1 and r.user_id = $2
         union all
         select r.*, chain.depth + 1 from model_responses r
           join chain on r.id = chain.previous_response_id
           where r.user_id = $2 and chain.depth < $3
       )
       select ${columns} from chain order by depth desc`,
      [previousId, userId, maxChainLength - 1],
    );
    return rows;
  }

  /** Deletes the caller's response; false when there was none. */
  async delete(userId: string, id: string): Promise<boolean> {
    const { rowCount } = await this.pool.query('delete from model_responses where id = $1 and user_id = $2', [
      id,
      userId,
    ]);
    return (rowCount ?? 0) > 0;
  }

  /** A background response's worker took it: `queued` → `in_progress`. */
  async markInProgress(id: string): Promise<void> {
    await this.pool.query(`update model_responses set status = 'in_progress' where id = $1 and status = 'queued'`, [
      id,
    ]);
  }

  /** A background response that found its model saturated waits in the queue again: `in_progress` → `queued`. */
  async markQueued(id: string): Promise<void> {
    await this.pool.query(`update model_responses set status = 'queued' where id = $1 and status = 'in_progress'`, [
      id,
    ]);
  }

  /**
   * Records how the response ended (once: only a response still queued or running is written), on `executor`: the
   * pool, or the transaction of the call's settlement (activities/provider-calls.ts, `closeResponse`).
   */
  async finish(end: ResponseEnd, executor: Queryable = this.pool): Promise<void> {
    await run(executor, finishStatement, endParameters(end));
  }

  /**
   * The response's end as a write riding in its call's settlement statement (activities/credits/credit-ledger.ts,
   * `SettledWrite`): a non-streamed answer's settlement and its Response's end in one statement and commit.
   */
  settledEnd(end: ResponseEnd): SettledWrite {
    return {
      name: 'response-end',
      cte: (first) => `response_end as (${endUpdate(first)})`,
      values: endParameters(end),
    };
  }
}

/** The values of a response's end, in the order of `finishStatement`'s parameters. */
function endParameters(end: ResponseEnd): unknown[] {
  const values = endValues(end);
  return [
    end.responseId,
    values.status,
    values.servedModel,
    JSON.stringify(values.output),
    values.usage ? JSON.stringify(values.usage) : null,
    values.error ? JSON.stringify(values.error) : null,
    values.incompleteDetails ? JSON.stringify(values.incompleteDetails) : null,
  ];
}

/**
 * A response's end, from `queued` or `in_progress` only, its parameters numbered from `first` in `endParameters`'
 * order: alone (`finishStatement`) or riding in a settlement (`settledEnd`).
 */
function endUpdate(first: number): string {
  const [id, status, served, output, usage, error, incomplete] = Array.from(
    { length: 7 },
    (_, offset) => `$${first + offset}`,
  );
  return `update model_responses set status = ${status}::text, served_model = coalesce(${served}::text, served_model),
           output = ${output}::jsonb, usage = ${usage}::jsonb, error = ${error}::jsonb,
           incomplete_details = ${incomplete}::jsonb, completed_at = now()
         where id = ${id}::text and status in ('queued', 'in_progress')`;
}

/** A response's end (prepared: a Response whose call could not write it with its settlement). */
const finishStatement = { name: 'response-finish', text: endUpdate(1) };

function endValues(end: ResponseEnd) {
  if (end.outcome === 'failed') {
    return {
      status: 'failed' as const,
      servedModel: null,
      output: [],
      usage: null,
      error: { code: end.code, message: end.message },
      incompleteDetails: null,
    };
  }
  if (end.outcome === 'cancelled') {
    return {
      status: 'cancelled' as const,
      servedModel: null,
      output: [],
      usage: null,
      error: null,
      incompleteDetails: null,
    };
  }
  const status = finishedStatus(end.finishReason, end.stopped);
  return {
    status,
    servedModel: end.model,
    output: outputItems(end.responseId, end.message, status === 'completed'),
    usage: responseUsage(end.usage),
    error: null,
    incompleteDetails: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
  };
}

/** The workflow's steps on its response's row (local activities of the completion workflow). */
export function createResponseActivities(dependencies: { pool: Pool }) {
  const store = new ResponseStore(dependencies.pool);
  return {
    async startResponse(responseId: string): Promise<void> {
      await store.markInProgress(responseId);
    },
    async requeueResponse(responseId: string): Promise<void> {
      await store.markQueued(responseId);
    },
    async recordResponse(end: ResponseEnd): Promise<void> {
      await store.finish(end);
    },
  };
}

export type ResponseActivities = ReturnType<typeof createResponseActivities>;
