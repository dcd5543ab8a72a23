/**
 * How a media job reads from outside, in one place: `GET /api/v1/media/{video|music}/{id}` (gateway spec 2, "Media
 * jobs"), the same job in its callback's body (activities/media/callbacks.ts) and in `DELETE`'s answer, and the
 * shorter item of `GET /api/v1/media/jobs`. Both the API and the worker read `media_jobs` rows with `jobColumns` and
 * shape them here, so a callback's receiver sees exactly what a poll would have shown.
 */
import { mediaFilePath } from './files.ts';

/** The columns every view needs, for a `select` (`media_jobs` unqualified). */
export const jobColumns = `id, kind, status, engine, request, result, credits, error, created_at, finished_at,
  callback_url, callback_status`;

export interface MediaJobRow {
  id: string;
  kind: string;
  status: string;
  engine: string | null;
  request: { duration?: number; mode?: string; type?: string } & Record<string, unknown>;
  /** `expired`: the output's file passed its TTL (the sweep marked it, or the API saw it due). */
  result: { fileName?: string; thumbnailFileName?: string; expired?: boolean } | null;
  credits: number;
  error: string | null;
  created_at: Date;
  finished_at: Date | null;
  callback_url: string | null;
  callback_status: string | null;
}

/** The statuses a job may have; `queued` and `processing` are the ones a DELETE may still cancel. */
export const jobStatuses = ['queued', 'processing', 'completed', 'failed', 'cancelled'] as const;
export const cancellableStatuses: readonly string[] = ['queued', 'processing'];

/**
 * The fields every view shares: completion time, result URL and error only where they apply. An expired output has
 * no URL (it would be a dead link) but `expired: true`.
 */
function common(row: MediaJobRow) {
  const completed = row.status === 'completed';
  const fileName = completed ? row.result?.fileName : undefined;
  const expired = fileName !== undefined && row.result?.expired === true;
  return {
    completedAt: completed && row.finished_at ? { completed_at: row.finished_at.toISOString() } : {},
    url: fileName && !expired ? mediaFilePath(fileName) : undefined,
    thumbnail: !expired && row.result?.thumbnailFileName ? mediaFilePath(row.result.thumbnailFileName) : undefined,
    error: row.status === 'failed' && row.error ? { error: row.error } : {},
    expired: expired ? { expired: true } : {},
  };
}

/**
 * A video or music job as its GET shows it. `withCallback` adds `callback_url` and `callback_status` (left out of
 * the callback's own body, whose delivery they describe).
 */
export function asyncJobView(row: MediaJobRow, withCallback = true): Record<string, unknown> {
  const { completedAt, url, thumbnail, error, expired } = common(row);
  const callback =
    withCallback && row.callback_url
      ? { callback_url: row.callback_url, callback_status: row.callback_status ?? 'pending' }
      : {};
  const base = {
    status: row.status,
    duration: row.request.duration,
    engine: row.engine,
    credits_used: row.credits,
    created_at: row.created_at.toISOString(),
    ...completedAt,
  };
  if (row.kind === 'video') {
    return {
      video_id: row.id,
      ...base,
      mode: row.request.mode,
      ...(url ? { url, video_url: url } : {}),
      ...(url && thumbnail ? { thumbnail_url: thumbnail } : {}),
      ...expired,
      ...error,
      ...callback,
    };
  }
  return {
    music_id: row.id,
    ...base,
    type: row.request.type,
    ...(url ? { audio_url: url } : {}),
    ...expired,
    ...error,
    ...callback,
  };
}

/** One item of `GET /api/v1/media/jobs`: any kind of job, the fields every kind has. */
export function jobListItem(row: MediaJobRow): Record<string, unknown> {
  const { completedAt, url, error, expired } = common(row);
  return {
    id: row.id,
    kind: row.kind,
    status: row.status,
    engine: row.engine,
    credits_used: row.credits,
    created_at: row.created_at.toISOString(),
    ...completedAt,
    ...(url ? { url } : {}),
    ...expired,
    ...error,
  };
}
