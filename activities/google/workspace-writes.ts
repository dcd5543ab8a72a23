/**
 * Once-only writes to a user's Google workspace, by tool call (`workspace_writes`, keyed by the call's `callKey`):
 * a tool call that ran is never run again, whether the turn's activity is retried, replayed after a worker died, or
 * the tool called twice with the same key. Every workspace write goes through here (send, draft, create, update,
 * delete, upload, append, complete), after the user approved it.
 *
 * - A write first claims its key (insert … on conflict do nothing), runs, then stores its result: a second run of
 *   the key answers that result without touching Google.
 * - A write that fails deletes its claim (Google refused it, or it never reached Google), so a retry runs it.
 * - While another run of the key is in flight the call fails, retryable, and never runs beside it.
 * - A claim left by a process that died mid-write is taken over after `staleClaimMs`; the write then runs again with
 *   `takeover: true`. Where Google offers a key of its own the tool makes that safe: Calendar events are created with
 *   an id derived from the call key (a second insert answers 409, and the tool reads the existing event), Drive
 *   uploads carry the call key in `appProperties` (the tool looks the file up first). Gmail, Sheets appends, Docs and
 *   Tasks offer no such key: there a write that Google accepted just before its process died may run twice, the same
 *   narrow window the SMTP mailer has (activities/mail/mailer.ts).
 */
import type { Pool } from '../../db/pool.ts';
import { ToolError } from '../tools/tool.ts';

/** A claim older than this, still not done, belonged to a process that died mid-write: it may be taken over. */
const staleClaimMs = 2 * 60_000;

export interface WorkspaceWrite {
  callKey: string;
  userId: string;
  /** The tool's name, for the record. */
  tool: string;
}

export class WorkspaceWrites {
  private readonly pool: Pool;

  constructor(pool: Pool) {
    this.pool = pool;
  }

  async once<T>(write: WorkspaceWrite, effect: (attempt: { takeover: boolean }) => Promise<T>): Promise<T> {
    const claimedAt = new Date();
    const fresh = await this.pool.query(
      `insert into workspace_writes (call_key, user_id, tool, result, claimed_at, done_at)
       values ($1, $2, $3, null, $4, null)
       on conflict (call_key) do nothing`,
      [write.callKey, write.userId, write.tool, claimedAt],
    );
    let takeover = false;
    if (fresh.rowCount === 0) {
      const { rows } = await this.pool.query<{ result: T; done_at: Date | null; user_id: string }>(
        'select result, done_at, user_id from workspace_writes where call_key = $1',
        [write.callKey],
      );
      const earlier = rows[0];
      if (earlier && earlier.user_id !== write.userId)
        throw new Error('a workspace write key was reused by another user');
      if (earlier?.done_at) return earlier.result;
      const taken = await this.pool.query(
        `update workspace_writes set claimed_at = $2
         where call_key = $1 and done_at is null and claimed_at < now() - make_interval(secs => $3)`,
        [write.callKey, claimedAt, staleClaimMs / 1000],
      );
      if (taken.rowCount === 0) {
        throw new ToolError('this call is already running; try again shortly', { retryable: true });
      }
      takeover = true;
    }
    let result: T;
    try {
      result = await effect({ takeover });
    } catch (error) {
      await this.pool
        .query('delete from workspace_writes where call_key = $1 and claimed_at = $2 and done_at is null', [
          write.callKey,
          claimedAt,
        ])
        .catch(() => undefined);
      throw error;
    }
    await this.pool.query(
      'update workspace_writes set result = $3::jsonb, done_at = now() where call_key = $1 and claimed_at = $2',
      [write.callKey, claimedAt, JSON.stringify(result ?? null)],
    );
    return result;
  }
}
