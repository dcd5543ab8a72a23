/**
 * Heartbeats for long activities, so Temporal notices a worker that died (or an activity task that never reached
 * one) after the activity's heartbeat timeout instead of its whole start-to-close timeout. `heartbeat(details)`
 * reports progress once; `keepAlive(work)` heartbeats every few seconds while `work` runs (for steps that cannot report
 * progress themselves, such as one long download). Both are no-ops outside an activity (tests calling the functions
 * directly).
 */
import { Context } from '@temporalio/activity';

const keepAliveEveryMs = 5_000;

function currentContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    return undefined;
  }
}

/** Reports progress to Temporal once. */
export function heartbeat(details?: unknown): void {
  currentContext()?.heartbeat(details);
}

/** Runs `work`, heartbeating every 5 s until it settles. */
export async function keepAlive<T>(work: () => Promise<T>): Promise<T> {
  const context = currentContext();
  if (!context) return work();
  context.heartbeat();
  const timer = setInterval(() => context.heartbeat(), keepAliveEveryMs);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
