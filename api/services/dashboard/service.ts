/**
 * `GET /dashboard`: a caller's figures, or the platform's for the operator, over the last `days` days. Every figure is
 * an SQL aggregate over indexed columns (one statement per table, run side by side; no row is loaded to be counted
 * here):
 *
 * - messages per day and tool calls per tool: `chat_messages` of the caller's conversations (`chat_conversations`
 *   by owner), read from the index on (conversation_id, created_at, role, tool_name); the platform's from
 *   (created_at, role, tool_name). One scan answers both, by grouping sets.
 * - turns per day (and failed), turns per agent: `chat_turns`, likewise from (conversation_id, created_at, agent_id,
 *   status) or (created_at, agent_id, status).
 * - credits per day and per agent: the ledger's settlements (`credit_ledger` by (user_id, kind, created_at, amount,
 *   workflow_id)); a chat turn's settlements name its workflow, the turn's id, whose row names its agent.
 * - schedules: `schedule_tasks` by user_id, with each enabled task's next run from its cron (the schedules' own
 *   rule, api/services/schedules/service.ts), and every task counted by its last run's status (`never` before one).
 * - media jobs by status and kind: `media_jobs` by (user_id, created_at).
 * - inbound webhook runs by status: `webhook_runs`, where the deployment has that table (inbound webhooks, issue 18);
 *   null where it has not.
 *
 * Conversations belong to whoever owns them now (a linked chat's history counts for the account it was linked to);
 * credits to the account charged.
 */
import { run, type Pool } from '../../../db/pool.ts';
import { fireTimes } from '../schedules/service.ts';
import type { Principal } from '../apikeys/service.ts';
import type { Dashboard } from '../../agents/routes/dashboard/schema.ts';

/** The statements of one scope: the caller's (`$1` the owner `user:<id>` or the user id) or the platform's. */
function statementsOf(scope: 'user' | 'platform') {
  const user = scope === 'user';
  const day = `(created_at at time zone 'UTC')::date`;
  const conversations = user ? `conversation_id in (select id from chat_conversations where owner = $1) and` : '';
  const since = user ? '$2' : '$1';
  return {
    messages: {
      name: `dashboard-${scope}-messages`,
      text: `select ${day}::text as day, tool_name, count(*)::int as count, grouping(${day}) as by_tool
             from chat_messages where ${conversations} created_at >= ${since}
             group by grouping sets ((${day}), (tool_name))`,
    },
    turns: {
      name: `dashboard-${scope}-turns`,
      text: `select ${day}::text as day, agent_id, count(*)::int as turns,
                    (count(*) filter (where status = 'failed'))::int as failed, grouping(${day}) as by_agent
             from chat_turns where ${conversations} created_at >= ${since}
             group by grouping sets ((${day}), (agent_id))`,
    },
    credits: {
      name: `dashboard-${scope}-credits`,
      text: `select (l.created_at at time zone 'UTC')::date::text as day, t.agent_id, sum(l.amount)::bigint as credits,
                    grouping((l.created_at at time zone 'UTC')::date) as by_agent
             from credit_ledger l left join chat_turns t on l.workflow_id like 'chat-%' and t.id = l.workflow_id
             where ${user ? 'l.user_id = $1 and' : ''} l.kind = 'settle' and l.created_at >= ${since}
             group by grouping sets (((l.created_at at time zone 'UTC')::date), (t.agent_id))`,
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
    const conversationValues = scope === 'user' ? [owner, since] : [since];
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
        userValues,
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
