/**
 * Folds the dashboard's usage changes into its daily figures (db/entities/usage-triggers.ts writes the changes;
 * api/services/dashboard/service.ts reads both). Every API process checks every `intervalMs` whether the changes
 * tables hold `threshold` rows or more, and then folds them all in one transaction: each table's changes are deleted
 * and their sums added to the days table's rows (one upsert per owner, day and tool or agent), and to the platform's
 * rows (subject `*`: one per day and tool or agent, so the operator's figures read as few rows as one account's however
 * many accounts there are). A figure (the days rows plus the changes rows) reads the same before, during and after. A
 * change written meanwhile is not seen by the delete and stays for the next fold. One process folds at a time (a
 * transaction-scoped advisory lock; the others skip that round), and it is the only writer of the days tables.
 *
 * Why a threshold rather than every round: below it, the changes cost a dashboard read a scan of at most that many
 * small rows (well under a millisecond), and a quiet platform makes no write transaction every few seconds. Above it
 * (a busy hour, a deleted conversation of thousands of messages, a bulk load) the next round folds them.
 */
import { run, transaction, type Pool } from '../../../db/pool.ts';
import type { Logger } from '../../../process/logger.ts';

/** The subject of the platform's rows in every days table (no owner and no user id is `*`). */
export const platformSubject = '*';

const tables = [
  {
    changes: 'usage_message_changes',
    days: 'usage_message_days',
    subject: 'owner',
    dimension: 'tool_name',
    sums: ['messages'],
  },
  {
    changes: 'usage_turn_changes',
    days: 'usage_turn_days',
    subject: 'owner',
    dimension: 'agent_id',
    sums: ['turns', 'failed'],
  },
  {
    changes: 'usage_credit_changes',
    days: 'usage_credit_days',
    subject: 'user_id',
    dimension: 'agent_id',
    sums: ['settlements', 'credits'],
  },
];

/** Whether `$1` changes are waiting in any table (each counted up to `$1` rows only). */
const pendingStatement = {
  name: 'usage-fold-pending',
  text: `select greatest(${tables
    .map(({ changes }) => `(select count(*) from (select from ${changes} limit $1) c)`)
    .join(', ')}) >= $1 as due`,
};

/** The lock only one process holds while it folds (released at the end of its transaction). */
const lockStatement = {
  name: 'usage-fold-lock',
  text: `select pg_try_advisory_xact_lock(hashtext('tessera:usage-fold')) as locked`,
};

/**
 * A table's fold: its changes, summed per key into their subject's rows and per day and dimension into the platform's
 * (`*`), in one statement. Ordered by key, so two folds could not deadlock even without the lock.
 */
const foldStatements = tables.map(({ changes, days, subject, dimension, sums }) => {
  const key = `${subject}, day, ${dimension}`;
  const summed = sums.map((column) => `sum(${column})`).join(', ');
  return {
    name: `usage-fold-${changes}`,
    text: `with folded as (delete from ${changes} returning *)
           insert into ${days} as d (${key}, ${sums.join(', ')})
           select ${key}, ${summed} from folded group by ${key}
           union all
           select '${platformSubject}', day, ${dimension}, ${summed} from folded group by day, ${dimension}
           order by 1, 2, 3
           on conflict (${key}) do update
             set ${sums.map((column) => `${column} = d.${column} + excluded.${column}`).join(', ')}`,
  };
});

/**
 * Folds every change now (when no other process is folding): the number of days rows written, or null when another
 * process held the lock. `threshold`: fold only when a changes table holds at least that many rows (0: always).
 */
export async function foldUsage(pool: Pool, threshold = 0): Promise<number | null> {
  if (threshold > 0) {
    const [pending] = await run<{ due: boolean }>(pool, pendingStatement, [threshold]);
    if (!pending?.due) return 0;
  }
  return transaction(pool, async (client) => {
    const [lock] = await run<{ locked: boolean }>(client, lockStatement, []);
    if (!lock?.locked) return null;
    let written = 0;
    for (const statement of foldStatements) {
      written += (await client.query({ name: statement.name, text: statement.text })).rowCount ?? 0;
    }
    return written;
  });
}

export interface UsageFold {
  stop(): Promise<void>;
}

/** Starts folding in this process: a check every `intervalMs`, a fold when `threshold` changes are waiting. */
export function startUsageFold(
  pool: Pool,
  logger: Logger,
  { intervalMs = 5_000, threshold = 2_000 }: { intervalMs?: number; threshold?: number } = {},
): UsageFold {
  let running: Promise<unknown> | null = null;
  const timer = setInterval(() => {
    // A round still folding (a large backlog) is left to finish.
    running ??= foldUsage(pool, threshold)
      .catch((error: unknown) => logger.warn({ err: error }, 'usage fold failed (the changes stay for the next round)'))
      .finally(() => (running = null));
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
