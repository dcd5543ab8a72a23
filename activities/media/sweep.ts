/**
 * The sweep of expired media files, run by the `mediaFilesSweep` workflow that the `tessera-media-sweep` Temporal
 * Schedule starts every `MEDIA_SWEEP_INTERVAL`: deletes every file older than `MEDIA_FILE_TTL_DAYS` in the configured
 * store (local disk by mtime, S3 by LastModified: activities/media/files.ts), then marks the jobs whose result expired
 * (`media_jobs.result.expired = true`), so GET of a job answers `expired: true` and no URL rather than a dead link.
 * A job (its `fileName`, and any more in `files`) is marked when one of its files was deleted by this run or when it
 * finished longer than the TTL ago (its files were stored a moment before it finished, so an earlier run may have
 * deleted them). Idempotent: a repeated or overlapping run deletes what is left and marks nothing twice.
 */
import { heartbeat } from '../heartbeat.ts';
import type { Pool } from '../../db/pool.ts';
import type { MediaFiles } from './files.ts';

export interface MediaSweepDependencies {
  pool: Pool;
  media: { files: MediaFiles };
}

const markExpired = {
  name: 'media-jobs-mark-expired',
  text: `update media_jobs set result = result || '{"expired": true}'::jsonb, updated_at = now()
         where status = 'completed' and result ? 'fileName' and not (result ? 'expired')
           and (finished_at <= $1 or result->>'fileName' = any($2::text[])
                or (jsonb_typeof(result->'files') = 'array' and result->'files' ?| $2::text[]))`,
};

/** Names per statement: the array is one parameter, kept small enough to plan and log. */
const markBatch = 1000;

export function createMediaSweepActivities({ pool, media }: MediaSweepDependencies) {
  return {
    /** Deletes the expired media files and marks their jobs; answers how many of each. */
    async sweepMediaFiles(): Promise<{ deletedFiles: number; expiredJobs: number }> {
      const deleted = await media.files.sweep({ onProgress: heartbeat });
      const cutoff = media.files.storedBefore();
      let expiredJobs = 0;
      for (let start = 0; start === 0 || start < deleted.length; start += markBatch) {
        const names = deleted.slice(start, start + markBatch);
        const marked = await pool.query({ ...markExpired, values: [cutoff, names] });
        expiredJobs += marked.rowCount ?? 0;
      }
      return { deletedFiles: deleted.length, expiredJobs };
    },
  };
}

export type MediaSweepActivities = ReturnType<typeof createMediaSweepActivities>;
