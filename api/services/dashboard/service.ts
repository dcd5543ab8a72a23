/**
 * `GET /dashboard`: a caller's figures, or the platform's for the operator, over the last `days` days.
 *
 * Messages, turns and credits are not counted from their rows on each request: that read every message, turn and
 * settlement of the period (100k messages: ~100 ms of PostgreSQL per request, growing with the history). PostgreSQL
 * keeps them per day instead (db/entities/usage-triggers.ts, migration `usage-rollups`):
 *
 * - `usage_message_days` (owner, day, tool_name: messages), `usage_turn_days` (owner, day, agent_id: turns, failed),
 *   `usage_credit_days` (user_id, day, agent_id: settlements, credits), and the platform's rows in each (subject `*`).
 *   A request reads the caller's rows of the period by key (at most one per day and tool or agent), or the
 *   platform's, plus the changes not folded yet: a few hundred rows at most, however long the history and however
 *   many accounts.
 * - Row triggers on `chat_messages`, `chat_turns`, `chat_conversations` and `credit_ledger` append a signed change
 *   for every row that starts or stops counting, in the writer's own transaction: every writer is covered (gateway
 *   session chat, agent turns, scheduled runs, webhooks, A2A, team broadcasts, an account merge in a migration, a
 *   statement run by hand) and the figures cannot drift from the rows. On the hot path that is one plain insert per
 *   message, turn or settlement written (plus a primary-key lookup of its conversation's owner or its turn's agent):
 *   no update of a shared counter row, so no writer waits for another's lock nor deadlocks on two.
 * - The API process folds the changes into the days tables once a few thousand are waiting (usage-fold.ts), adding
 *   them to their owner's rows and to the platform's; a figure is the days rows plus the changes, exact either way.
 * - Conversations belong to whoever owns them now (a linked chat's history counts for the account it was linked to):
 *   a conversation whose owner changes moves its messages and turns to the new owner (recounted from its rows: rare).
 *   A deleted session's messages (and its conversation's turns, when it goes) leave the counts with them. Credits
 *   count for the account charged, by the agent of the chat turn whose workflow settled them (`chat_turns.id =
 *   workflow_id`; null for what no chat turn settled, such as completions and media, and for a turn since deleted).
 * - Days are UTC days; the period is the last `days` of them, today included.
 *
 * The rest is read from its own rows, small tables by indexed columns:
 * - schedules: `schedule_tasks` by user_id, with each enabled task's next run from its cron (the schedules' own
 *   rule, api/services/schedules/service.ts), and every task counted by its last run's status (`never` before one).
 * - media jobs by status and kind: `media_jobs` by (user_id, created_at).
 * - inbound webhook runs by status: `webhook_runs`, where the deployment has that table (inbound webhooks, issue 18);
 *   null where it has not.
 *
 * Each figure is one statement (grouping sets give a figure's per-day and per-tool or per-agent rows at once), run
 * side by side.
 */
import { run, type Pool } from '../../../db/pool.ts';
import { fireTimes } from '../schedules/service.ts';
import type { Principal } from '../apikeys/service.ts';
import type { Dashboard } from '../../agents/routes/dashboard/schema.ts';
import { platformSubject } from './usage-fold.ts';

/**
 * A figure's rows in the period: the days table's and the changes not folded yet (usage-fold.ts). The caller's: their
 * subject's rows (`subject = $1`) of both. The platform's: the platform's days rows (subject `*`, kept by the fold)
 * and every change. The days table is read by its key (subject, day); the changes table, kept small by the fold, is
 * scanned.
 */
function usageRows(table: string, subject: string, user: boolean, columns: string, since: string): string {
  const period = `day >= ${since}::date`;
  const days = user ? `${subject} = $1` : `${subject} = '${platformSubject}'`;
  return `(select day, ${columns} from ${table}_days where ${days} and ${period}
           union all
           select day, ${columns} from ${table}_changes where ${user ? `${subject} = $1 and ` : ''}${period}) u`;
}

/** The statements of one scope: the caller's (`$1` the owner `user:<id>` or the user id) or the platform's. */
function statementsOf(scope: 'user' | 'platform') {
  const user = scope === 'user';
  const since = user ? '$2' : '$1';
  return {
    messages: {
      name: `dashboard-${scope}-messages`,
      text: `select day::text as day, tool_name, sum(messages)::int as count, grouping(day) as by_tool
             from ${usageRows('usage_message', 'owner', user, 'tool_name, messages', since)}
             group by grouping sets ((day), (tool_name)) having sum(messages) > 0`,
    },
    turns: {
      name: `dashboard-${scope}-turns`,
      text: `select day::text as day, agent_id, sum(turns)::int as turns, sum(failed)::int as failed,
                    grouping(day) as by_agent
             from ${usageRows('usage_turn', 'owner', user, 'agent_id, turns, failed', since)}
             group by grouping sets ((day), (agent_id)) having sum(turns) > 0`,
    },
    // A day or an agent is listed when it had a settlement, even one of 0 credits.
    credits: {
      name: `dashboard-${scope}-credits`,
      text: `select day::text as day, agent_id, sum(credits)::bigint as credits, grouping(day) as by_agent
             from ${usageRows('usage_credit', 'user_id', user, 'agent_id, settlements, credits', since)}
             group by grouping sets ((day), (agent_id)) having sum(settlements) > 0`,
    },
    schedules: {
      name: `dashboard-${scope}-schedules`,
      text: `select id, agent_id, cron, timezone, enabled, last_run_at, last_run_status,
                    count(*) over ()::int as total, (count(*) filter (where enabled) over ())::int as enabled_count
             from schedule_tasks ${user ? 'where user_id = $1' : ''}
             order by last_run_at desc nulls last, created_at, id limit 100`,
    },
    scheduleRuns: {
      name: `dashboard-${scope}-schedule-runs`,
      text: `select coalesce(last_run_status, 'never') as status, count(*)::int as count from schedule_tasks
             ${user ? 'where user_id = $1' : ''} group by 1`,
    },
    media: {
      name: `dashboard-${scope}-media`,
      text: `select kind, status, count(*)::int as count from media_jobs
             where ${user ? 'user_id = $1 and' : ''} created_at >= ${since} group by kind, status`,
    },
    webhooks: {
      name: `dashboard-${scope}-webhook-runs`,
      text: `select status, count(*)::int as count from webhook_runs
             where ${user ? 'user_id = $1 and' : ''} created_at >= ${since} group by status`,
    },
  };
}

const statements = { user: statementsOf('user'), platform: statementsOf('platform') };
const webhookRunsTable = {
  name: 'dashboard-webhook-runs-table',
  text: `select to_regclass('webhook_runs') is not null as present`,
};

const top = 10;

export class DashboardService {
  private readonly pool: Pool;
  /** Whether `webhook_runs` exists: asked until it does (a migration may add it while the process runs). */
  private webhookRunsPresent = false;

  constructor(dependencies: { pool: Pool }) {
    this.pool = dependencies.pool;
  }

  async dashboard(principal: Principal, days: number, now = new Date()): Promise<Dashboard> {
    const scope = principal.operator ? 'platform' : 'user';
    const sql = statements[scope];
    const since = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() - (days - 1)));
    const owner = `user:${principal.userId}`;
    // The daily figures by UTC day (`YYYY-MM-DD`); the other tables by the period's first instant.
    const sinceDay = since.toISOString().slice(0, 10);
    const conversationValues = scope === 'user' ? [owner, sinceDay] : [sinceDay];
    const creditValues = scope === 'user' ? [principal.userId, sinceDay] : [sinceDay];
    const userValues = scope === 'user' ? [principal.userId, since] : [since];
    const [messages, turns, credits, schedules, scheduleRuns, media, webhooks] = await Promise.all([
      run<{ day: string | null; tool_name: string | null; count: number; by_tool: number }>(
        this.pool,
        sql.messages,
        conversationValues,
      ),
      run<{ day: string | null; agent_id: string | null; turns: number; failed: number; by_agent: number }>(
        this.pool,
        sql.turns,
        conversationValues,
      ),
      run<{ day: string | null; agent_id: string | null; credits: string; by_agent: number }>(
        this.pool,
        sql.credits,
        creditValues,
      ),
      run<{
        id: string;
        agent_id: string;
        cron: string;
        timezone: string;
        enabled: boolean;
        last_run_at: Date | null;
        last_run_status: string | null;
        total: number;
        enabled_count: number;
      }>(this.pool, sql.schedules, scope === 'user' ? [principal.userId] : []),
      run<{ status: string; count: number }>(this.pool, sql.scheduleRuns, scope === 'user' ? [principal.userId] : []),
      run<{ kind: string; status: string; count: number }>(this.pool, sql.media, userValues),
      this.webhookRuns(sql.webhooks, userValues),
    ]);
    const byDay = <Row extends { day: string | null }>(rows: Row[], grouped: (row: Row) => boolean) =>
      rows.filter((row) => !grouped(row) && row.day !== null).sort((a, b) => a.day!.localeCompare(b.day!));
    const dailyMessages = byDay(messages, (row) => row.by_tool === 1);
    const tools = messages.filter((row) => row.by_tool === 1 && row.tool_name !== null);
    const dailyTurns = byDay(turns, (row) => row.by_agent === 1);
    const agents = turns.filter((row) => row.by_agent === 1 && row.agent_id !== null);
    const dailyCredits = byDay(credits, (row) => row.by_agent === 1);
    const mediaByStatus: Record<string, number> = {};
    const mediaByKind: Record<string, Record<string, number>> = {};
    for (const row of media) {
      mediaByStatus[row.status] = (mediaByStatus[row.status] ?? 0) + row.count;
      (mediaByKind[row.kind] ??= {})[row.status] = row.count;
    }
    const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
    return {
      scope,
      days,
      since: since.toISOString(),
      generated_at: now.toISOString(),
      totals: {
        messages: sum(dailyMessages.map((row) => row.count)),
        turns: sum(dailyTurns.map((row) => row.turns)),
        failed_turns: sum(dailyTurns.map((row) => row.failed)),
        tool_calls: sum(tools.map((row) => row.count)),
        credits_used: sum(dailyCredits.map((row) => Number(row.credits))),
      },
      messages_per_day: dailyMessages.map((row) => ({ day: row.day!, messages: row.count })),
      turns_per_day: dailyTurns.map((row) => ({ day: row.day!, turns: row.turns, failed: row.failed })),
      credits_per_day: dailyCredits.map((row) => ({ day: row.day!, credits: Number(row.credits) })),
      credits_per_agent: credits
        .filter((row) => row.by_agent === 1)
        .map((row) => ({ agent_id: row.agent_id, credits: Number(row.credits) }))
        .sort((a, b) => b.credits - a.credits || String(a.agent_id).localeCompare(String(b.agent_id))),
      top_agents: agents
        .map((row) => ({ agent_id: row.agent_id!, turns: row.turns, failed: row.failed }))
        .sort((a, b) => b.turns - a.turns || a.agent_id.localeCompare(b.agent_id))
        .slice(0, top),
      top_tools: tools
        .map((row) => ({ tool: row.tool_name!, calls: row.count }))
        .sort((a, b) => b.calls - a.calls || a.tool.localeCompare(b.tool))
        .slice(0, top),
      schedules: {
        total: schedules[0]?.total ?? 0,
        enabled: schedules[0]?.enabled_count ?? 0,
        last_run_by_status: Object.fromEntries(scheduleRuns.map((row) => [row.status, row.count])),
        tasks: schedules.map((task) => ({
          task_id: task.id,
          agent_id: task.agent_id,
          cron: task.cron,
          timezone: task.timezone,
          enabled: task.enabled,
          last_run_at: task.last_run_at ? new Date(task.last_run_at).toISOString() : null,
          last_run_status: task.last_run_status,
          next_run_at: task.enabled ? nextRun(task.cron, task.timezone, now) : null,
        })),
      },
      media_jobs: { by_status: mediaByStatus, by_kind: mediaByKind },
      webhook_runs: webhooks,
    };
  }

  private async webhookRuns(
    statement: { name: string; text: string },
    values: unknown[],
  ): Promise<Dashboard['webhook_runs']> {
    if (!this.webhookRunsPresent) {
      const [table] = await run<{ present: boolean }>(this.pool, webhookRunsTable, []);
      if (!table?.present) return null;
      this.webhookRunsPresent = true;
    }
    const rows = await run<{ status: string; count: number }>(this.pool, statement, values);
    return { by_status: Object.fromEntries(rows.map((row) => [row.status, row.count])) };
  }
}

/** A task's next fire time, or null when its cron or zone no longer reads (the task would not fire either). */
function nextRun(cron: string, timezone: string, now: Date): string | null {
  try {
    return fireTimes(cron, timezone, 1, now)[0]?.toISOString() ?? null;
  } catch {
    return null;
  }
}
