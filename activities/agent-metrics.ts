/**
 * The agent service's own counters, observed where the work happens: the chat turn's activities (a turn's end, each
 * tool call), in whichever process runs them. One registry per process, beside each app's request metrics; the agent
 * service's `GET /metrics` exposes it (api/agents/app.ts). With `npm start` the API process's in-process worker runs
 * the turns it starts (eager start, then its sticky task queue), so its `/metrics` counts them; a turn that the
 * background worker took over (its API process died) is counted by that worker process, which serves no `/metrics`.
 * Approvals waiting are durable state, not a count of events: a gauge read from the database at scrape time
 * (`chat_turns.approval_expires_at`), so every API process reports the platform's true number.
 */
import { Counter, Registry } from 'prom-client';

export const agentActivityRegistry = new Registry();

/**
 * An agent as a label: a built-in agent by its id; every user's custom agent (`agt_…`, without bound in number) as
 * `custom`, so the metric's series stay few.
 */
export function agentLabel(agentId: string): string {
  return agentId.startsWith('agt_') ? 'custom' : agentId;
}

/** An agent turn's end: `done` or `failed` (counted once, by the call that ended it). */
export const agentTurns = new Counter({
  name: 'tessera_agent_turns_total',
  help: 'Agent service turns ended, by agent and outcome (done, failed)',
  labelNames: ['agent', 'outcome'] as const,
  registers: [agentActivityRegistry],
});

/**
 * A tool call of an agent turn, by its outcome: `ok`, `error` (the tool answered with a failure), `unknown` (no such
 * tool offered), `retried` (a transient failure the activity's retry policy tries again).
 */
export const agentToolCalls = new Counter({
  name: 'tessera_agent_tool_calls_total',
  help: 'Tool calls of agent service turns, by tool and outcome (ok, error, unknown, retried)',
  labelNames: ['tool', 'outcome'] as const,
  registers: [agentActivityRegistry],
});
