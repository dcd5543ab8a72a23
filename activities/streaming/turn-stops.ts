/**
 * Stop, for a turn that is not a loop: the model call it is streaming, or the tool it is running, ends now.
 *
 * The turn's workflow is told durably, by the `cancelTurn` update (workflows/chat-turn.workflow.ts), and ends
 * `cancelled` after the step it is in. But a step is a local activity inside a workflow task, and Temporal delivers
 * an update to a running workflow only when that task ends (or at its next heartbeat, seconds later): a streamed
 * answer would go on for that long after Stop. So the step itself is also told, here: the process running it aborts
 * it at once, and the step ends early with what it had (the text streamed so far, settled at what it used; a tool's
 * "stopped" result). The API asks the process it runs in and, through NOTIFY on `tessera_turn_stops` (one shared
 * listening connection, db/listener.ts), every other process, since the turn may run in any worker.
 *
 * A stop is remembered for `rememberMs`, so a step that starts just after it (the next tool call, the next model
 * round, before the update reached the workflow) ends at once instead of running.
 */
import type pg from 'pg';
import type { ChannelHandler, PgListener } from '../../db/listener.ts';
import { notify } from '../../db/listener.ts';

export const turnStopsChannel = 'tessera_turn_stops';

/** A step's view of its turn's stop: `signal` aborts when a person stops the turn. */
export interface TurnStopWatch {
  signal: AbortSignal;
  release(): void;
}

export class TurnStops {
  private readonly pool: Pick<pg.Pool, 'query'>;
  private readonly rememberMs: number;
  private readonly watching = new Map<string, Set<AbortController>>();
  private readonly requested = new Map<string, number>();

  constructor(pool: Pick<pg.Pool, 'query'>, options: { rememberMs?: number } = {}) {
    this.pool = pool;
    this.rememberMs = options.rememberMs ?? 10 * 60_000;
  }

  /** Hears the stops other processes ask for. */
  async listen(listener: PgListener): Promise<void> {
    const handler: ChannelHandler = { notify: (turnId) => this.stopHere(turnId) };
    await listener.subscribe(turnStopsChannel, handler);
  }

  /** Watches for a stop of `turnId` while a step of it runs; already aborted when the turn was stopped before. */
  watch(turnId: string): TurnStopWatch {
    const controller = new AbortController();
    if (this.wasStopped(turnId)) controller.abort();
    let set = this.watching.get(turnId);
    if (!set) this.watching.set(turnId, (set = new Set()));
    set.add(controller);
    return {
      signal: controller.signal,
      release: () => {
        set.delete(controller);
        if (set.size === 0 && this.watching.get(turnId) === set) this.watching.delete(turnId);
      },
    };
  }

  /** Stops the turn's running step here at once, and asks every other process to (NOTIFY). */
  async stop(turnId: string): Promise<void> {
    this.stopHere(turnId);
    await notify(this.pool, turnStopsChannel, turnId);
  }

  private stopHere(turnId: string): void {
    const now = Date.now();
    this.requested.delete(turnId);
    this.requested.set(turnId, now);
    for (const [id, at] of this.requested) {
      if (now - at > this.rememberMs) this.requested.delete(id);
      else break; // in insertion order: the rest are newer
    }
    for (const controller of this.watching.get(turnId) ?? []) controller.abort();
  }

  private wasStopped(turnId: string): boolean {
    const at = this.requested.get(turnId);
    return at !== undefined && Date.now() - at <= this.rememberMs;
  }
}
