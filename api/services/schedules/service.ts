/**
 * Scheduled tasks (spec 4.5; ARCHITECTURE.md 4). A task is a row of `schedule_tasks` (the source of truth for
 * listing: owner, agent, message, cron, time zone, enabled, last run) and a Temporal Schedule `schedule-<task id>`
 * that fires it: its action starts `scheduledRun` (workflows/scheduled-run.workflow.ts) with the task id, which reads
 * the task at run time, so a change of message or agent needs no change of the schedule.
 *
 * - Cron: 5 fields (minute hour day month weekday) or 6 with seconds first, validated by cron-parser in the task's
 *   IANA time zone (default UTC); `L`, `W`, `#`, `?` and `H` are refused (Temporal's cron dialect differs there).
 *   A 6-field cron is handed to Temporal as its 7-field form (seconds … weekday, year `*`).
 * - Firings closer than SCHEDULE_MIN_INTERVAL_SECONDS (default 60) are refused: the smallest gap between the next
 *   few fire times (cron-parser) must reach it.
 * - Overlap policy SKIP: a firing while the previous run still goes is dropped. Catch-up window
 *   SCHEDULE_CATCHUP_WINDOW (default 10 minutes): firings missed while Temporal or the workers were down run
 *   afterwards when they are at most that old.
 * - `enabled: false` is a paused schedule (its note says why); PATCH pauses and unpauses, and changes the spec.
 * - Order of writes: the row first, then the schedule (a failed create removes the row again); deletion removes the
 *   schedule, then the row. `reconcile()` at the agent service's start repairs what a crash between the two left:
 *   a schedule of this deployment (memo `taskQueue`) whose row is gone is deleted; a row without its schedule gets
 *   one.
 */
import type { CapacityQueue } from '../../../activities/capacity/capacity-queue.ts';
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleOptions,
} from '@temporalio/client';
import { CronExpressionParser } from 'cron-parser';
import type { Duration } from '@temporalio/common';
import {
  agentsTaskQueue,
  schedulePrefix,
  scheduleIdOf,
  type ScheduledRunInput,
  type ScheduledRunRecord,
} from '../../../common/schedules.ts';
import { kindKey, userKey } from '../../../common/search-attributes.ts';
import type { Pool } from '../../../db/pool.ts';
import { ApiError } from '../../errors.ts';
import { newId, type Principal } from '../apikeys/service.ts';

export interface ScheduleSettings {
  /** Seconds between two firings at least. */
  minIntervalSeconds: number;
  /** How old a missed firing may be and still run after downtime (a Temporal duration). */
  catchupWindow: string;
}

export interface TaskRow {
  id: string;
  user_id: string;
  agent_id: string;
  message: string;
  cron: string;
  timezone: string;
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
  last_run_at: Date | null;
  last_run_status: string | null;
  last_turn_id: string | null;
  last_error: string | null;
}

/** A task as the API shows it. */
export interface TaskView {
  id: string;
  agent_id: string;
  message: string;
  cron: string;
  timezone: string;
  enabled: boolean;
  schedule_id: string;
  session_id: string;
  /** The next fire times (ISO 8601), none while paused. */
  next_runs: string[];
  /**
   * The latest run: `running` from its start, `queued` (with `queue_position`, 1 = next among the owner's waiting jobs)
   * while it waits for a slot in the capacity queue (docs/capacity-queue.md).
   */
  last_run: { at: string; status: string; turn_id: string | null; error?: string; queue_position?: number } | null;
  created_at: string;
  updated_at: string;
}

export interface TaskInput {
  cron: string;
  agent_id: string;
  message: string;
  enabled: boolean;
  timezone: string;
}

/** Month and weekday names, the only letters a cron may hold here. */
const namesPattern = /\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|sun|mon|tue|wed|thu|fri|sat)\b/gi;
/** Next fire times shown per task. */
/** Schedules made at once while reconciling (each a create call to Temporal). */
const reconcileBatch = 8;
const shownRuns = 3;
/** Fire times compared for the minimum interval. */
const checkedRuns = 6;

/** Checks a cron in a time zone; the next `count` fire times, or an ApiError naming `cron` or `timezone`. */
export function fireTimes(cron: string, timezone: string, count: number, from = new Date()): Date[] {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    throw new ApiError('invalid_request', `Unknown time zone '${timezone}': give an IANA name such as Europe/Paris`, {
      param: 'timezone',
    });
  }
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    throw new ApiError(
      'invalid_request',
      `Invalid cron '${cron}': give 5 fields (minute hour day month weekday) or 6 with seconds first`,
      { param: 'cron' },
    );
  }
  if (/[a-z#?]/i.test(fields.join(' ').replace(namesPattern, ''))) {
    throw new ApiError('invalid_request', `Invalid cron '${cron}': L, W, #, ? and H are not supported`, {
      param: 'cron',
    });
  }
  try {
    const expression = CronExpressionParser.parse(fields.join(' '), { tz: timezone, currentDate: from, strict: false });
    return expression.take(count).map((date) => date.toDate());
  } catch (error) {
    throw new ApiError('invalid_request', `Invalid cron '${cron}': ${(error as Error).message}`, { param: 'cron' });
  }
}

/** A cron as Temporal reads it: 5 fields as they are; 6 (seconds first) as 7, with any year. */
function temporalCron(cron: string): string {
  const fields = cron.trim().split(/\s+/);
  return fields.length === 6 ? [...fields, '*'].join(' ') : fields.join(' ');
}

export class ScheduleService {
  private readonly dependencies: {
    pool: Pool;
    client: Client;
    taskQueue: string;
    settings: ScheduleSettings;
    /** Whether the owner has this agent (built-in or their own). */
    hasAgent(principal: Principal, agentId: string): Promise<boolean>;
    /** The capacity queue, for a waiting run's place. */
    capacity: Pick<CapacityQueue, 'position'>;
    log?: (fields: Record<string, unknown>, message: string) => void;
  };

  constructor(dependencies: ScheduleService['dependencies']) {
    this.dependencies = dependencies;
  }

  /** Validates cron, time zone and interval; the next fire times. */
  check(cron: string, timezone: string): Date[] {
    const times = fireTimes(cron, timezone, checkedRuns);
    const minimum = this.dependencies.settings.minIntervalSeconds;
    for (let index = 1; index < times.length; index++) {
      const gap = (times[index]!.getTime() - times[index - 1]!.getTime()) / 1000;
      if (gap < minimum) {
        throw new ApiError(
          'invalid_request',
          `The cron '${cron}' fires ${gap} seconds apart; scheduled tasks run at most once every ${minimum} seconds`,
          { param: 'cron' },
        );
      }
    }
    return times;
  }

  async create(principal: Principal, input: TaskInput): Promise<TaskView> {
    this.check(input.cron, input.timezone);
    await this.requireAgent(principal, input.agent_id);
    const id = newId('tsk');
    const { rows } = await this.dependencies.pool.query<TaskRow>(
      `insert into schedule_tasks (id, user_id, agent_id, message, cron, timezone, enabled, created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, $7, now(), now()) returning *`,
      [id, principal.userId, input.agent_id, input.message, input.cron, input.timezone, input.enabled],
    );
    const row = rows[0]!;
    try {
      await this.createSchedule(row);
    } catch (error) {
      await this.dependencies.pool.query('delete from schedule_tasks where id = $1', [id]);
      throw error;
    }
    return this.view(row);
  }

  async list(principal: Principal): Promise<TaskView[]> {
    const { rows } = await this.dependencies.pool.query<TaskRow>(
      'select * from schedule_tasks where user_id = $1 order by created_at, id',
      [principal.userId],
    );
    return Promise.all(rows.map((row) => this.withPlace(this.view(row))));
  }

  async get(principal: Principal, id: string): Promise<TaskView> {
    return this.withPlace(this.view(await this.owned(principal, id)));
  }

  /** A running run that waits in the capacity queue is shown `queued`, with its place (its holder is its turn). */
  private async withPlace(view: TaskView): Promise<TaskView> {
    const run = view.last_run;
    if (run?.status !== 'running' || !run.turn_id) return view;
    const place = await this.dependencies.capacity.position(run.turn_id);
    return place === null ? view : { ...view, last_run: { ...run, status: 'queued', queue_position: place } };
  }

  /** Changes the record and its schedule: a new cron or time zone updates the spec; `enabled` pauses or resumes. */
  async update(principal: Principal, id: string, changes: Partial<TaskInput>): Promise<TaskView> {
    const current = await this.owned(principal, id);
    const next = { ...current, ...changes } as TaskRow;
    if (changes.cron !== undefined || changes.timezone !== undefined) this.check(next.cron, next.timezone);
    if (changes.agent_id !== undefined) await this.requireAgent(principal, next.agent_id);
    const { rows } = await this.dependencies.pool.query<TaskRow>(
      `update schedule_tasks set agent_id = $2, message = $3, cron = $4, timezone = $5, enabled = $6, updated_at = now()
       where id = $1 returning *`,
      [id, next.agent_id, next.message, next.cron, next.timezone, next.enabled],
    );
    const row = rows[0];
    if (!row) throw new ApiError('not_found', `No scheduled task '${id}'`);
    const handle = this.dependencies.client.schedule.getHandle(scheduleIdOf(id));
    try {
      if (row.cron !== current.cron || row.timezone !== current.timezone) {
        await handle.update((previous) => ({ ...previous, spec: this.specOf(row) }));
      }
      if (row.enabled !== current.enabled) {
        if (row.enabled) await handle.unpause(`Resumed by ${principal.userId}`);
        else await handle.pause(pausedNote(principal.userId));
      }
    } catch (error) {
      // The schedule went missing (a crash between writes): made again from the row.
      if (!(error instanceof ScheduleNotFoundError)) throw error;
      await this.createSchedule(row);
    }
    return this.view(row);
  }

  /** Deletes the task's schedule, then its row (the session and its history stay). */
  async remove(principal: Principal, id: string): Promise<void> {
    await this.owned(principal, id);
    await this.deleteSchedule(id);
    await this.dependencies.pool.query('delete from schedule_tasks where id = $1', [id]);
  }

  /** The state of the latest run, written by the run (`scheduledRun`'s activity; runs never overlap). */
  async record(record: ScheduledRunRecord): Promise<void> {
    await this.dependencies.pool.query(
      `update schedule_tasks set last_run_at = $2, last_run_status = $3, last_turn_id = $4, last_error = $5
       where id = $1`,
      [record.taskId, record.at, record.status, record.turnId, record.error ?? null],
    );
  }

  /** A task row by id (any owner), for a run. */
  async row(id: string): Promise<TaskRow | null> {
    const { rows } = await this.dependencies.pool.query<TaskRow>('select * from schedule_tasks where id = $1', [id]);
    return rows[0] ?? null;
  }

  /**
   * At start: deletes this deployment's schedules whose task row is gone, and creates the schedule of a row that has
   * none. Returns what it did.
   */
  async reconcile(): Promise<{ deleted: string[]; created: string[] }> {
    const { client, pool, taskQueue } = this.dependencies;
    const { rows } = await pool.query<TaskRow>('select * from schedule_tasks');
    // Every task's schedule, made where it is missing. Asked of each task by a create (ScheduleAlreadyRunning when
    // it exists), not read off the schedule list: the list is eventually consistent, and a schedule deleted a moment
    // ago may still be listed, which left its task without one.
    const created: string[] = [];
    for (let start = 0; start < rows.length; start += reconcileBatch) {
      const batch = rows.slice(start, start + reconcileBatch);
      const made = await Promise.all(batch.map((row) => this.createSchedule(row)));
      batch.forEach((row, index) => made[index] && created.push(row.id));
    }
    // This deployment's schedules whose task is gone. A task's row is written before its schedule and deleted after
    // it, so a listed schedule whose row is missing when read again now, after the list, is an orphan (one created
    // since the first read has its row by now).
    const ids = new Set(rows.map((row) => row.id));
    const unknown: string[] = [];
    for await (const summary of client.schedule.list()) {
      if (!summary.scheduleId.startsWith(schedulePrefix) || summary.memo?.taskQueue !== taskQueue) continue;
      const taskId = summary.scheduleId.slice(schedulePrefix.length);
      if (!ids.has(taskId)) unknown.push(taskId);
    }
    const { rows: still } = unknown.length
      ? await pool.query<{ id: string }>('select id from schedule_tasks where id = any($1::text[])', [unknown])
      : { rows: [] };
    const kept = new Set(still.map((row) => row.id));
    const deleted = unknown.filter((taskId) => !kept.has(taskId));
    for (const taskId of deleted) await this.deleteSchedule(taskId);
    if (deleted.length || created.length) {
      this.dependencies.log?.({ deleted, created }, 'scheduled tasks reconciled with their Temporal schedules');
    }
    return { deleted, created };
  }

  private specOf(row: TaskRow) {
    return { cronExpressions: [temporalCron(row.cron)], timezone: row.timezone };
  }

  /** Creates the task's schedule; false when it exists already. */
  private async createSchedule(row: TaskRow): Promise<boolean> {
    const { client, taskQueue, settings } = this.dependencies;
    const input: ScheduledRunInput = { taskId: row.id, agentsTaskQueue: agentsTaskQueue(taskQueue) };
    const options: ScheduleOptions = {
      scheduleId: scheduleIdOf(row.id),
      spec: this.specOf(row),
      action: {
        type: 'startWorkflow',
        workflowType: 'scheduledRun',
        workflowId: `scheduled-run-${row.id}`,
        taskQueue,
        args: [input],
        typedSearchAttributes: [
          { key: kindKey, value: 'scheduled-run' },
          { key: userKey, value: row.user_id },
        ],
        staticSummary: `Scheduled task ${row.id} of ${row.user_id}: agent ${row.agent_id}`,
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: settings.catchupWindow as Duration },
      memo: { task: row.id, user: row.user_id, agent: row.agent_id, taskQueue },
      state: row.enabled
        ? { note: `Scheduled task ${row.id} (agent ${row.agent_id}) of ${row.user_id}` }
        : { paused: true, note: pausedNote(row.user_id) },
    };
    try {
      await client.schedule.create(options);
      return true;
    } catch (error) {
      if (error instanceof ScheduleAlreadyRunning) return false;
      // Temporal's cron dialect refused what cron-parser took: the caller's cron.
      if (
        error instanceof Error &&
        /invalid|cron/i.test(error.message) &&
        !/connect|unavailable/i.test(error.message)
      ) {
        throw new ApiError('invalid_request', `Invalid cron '${row.cron}': ${error.message}`, { param: 'cron' });
      }
      throw error;
    }
  }

  private async deleteSchedule(taskId: string): Promise<void> {
    try {
      await this.dependencies.client.schedule.getHandle(scheduleIdOf(taskId)).delete();
    } catch (error) {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
    }
  }

  private async requireAgent(principal: Principal, agentId: string): Promise<void> {
    if (!(await this.dependencies.hasAgent(principal, agentId))) {
      throw new ApiError('not_found', `No agent '${agentId}'`, { param: 'agent_id' });
    }
  }

  /** The caller's task; another user's is one that does not exist. */
  private async owned(principal: Principal, id: string): Promise<TaskRow> {
    const row = await this.row(id);
    if (!row || row.user_id !== principal.userId) throw new ApiError('not_found', `No scheduled task '${id}'`);
    return row;
  }

  private view(row: TaskRow): TaskView {
    let nextRuns: string[] = [];
    if (row.enabled) {
      try {
        nextRuns = fireTimes(row.cron, row.timezone, shownRuns).map((date) => date.toISOString());
      } catch {
        // A row written under other rules: shown without fire times rather than failing the listing.
      }
    }
    return {
      id: row.id,
      agent_id: row.agent_id,
      message: row.message,
      cron: row.cron,
      timezone: row.timezone,
      enabled: row.enabled,
      schedule_id: scheduleIdOf(row.id),
      session_id: `schedule:${row.id}`,
      next_runs: nextRuns,
      last_run: row.last_run_at
        ? {
            at: new Date(row.last_run_at).toISOString(),
            status: row.last_run_status ?? 'unknown',
            turn_id: row.last_turn_id,
            ...(row.last_error ? { error: row.last_error } : {}),
          }
        : null,
      created_at: new Date(row.created_at).toISOString(),
      updated_at: new Date(row.updated_at).toISOString(),
    };
  }
}

function pausedNote(userId: string): string {
  return `Paused: the task was disabled (enabled: false) by ${userId}`;
}
