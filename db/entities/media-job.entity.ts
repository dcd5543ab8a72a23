import { defineEntity, p } from '@mikro-orm/core';

/**
 * A media job (gateway spec 2, "Media jobs"; 4.3 and 4.5): one request for speech, video, … as run by its workflow
 * (`media-<kind>-<id>`). The id is the public one (`video_id`). `status` moves `queued` → `processing` →
 * `completed` | `failed` | `cancelled` (a synchronous job is written once it ended); `engine` names the engine that
 * served it; `request` is the validated request, `result` what it produced (`fileName` of a media file, duration, …;
 * `expired: true` once the file's TTL passed and the sweep marked it: activities/media/sweep.ts);
 * `credits` the price charged (or held until the job ends). Written by activities/media/media-activities.ts (plain
 * SQL), read by the media routes. Video and music jobs may carry a `callbackUrl`, called once when the job ends
 * (`callbackStatus` `pending` → `delivered` | `failed`, with its attempts, time and last error:
 * activities/media/callbacks.ts).
 */
export const MediaJob = defineEntity({
  name: 'MediaJob',
  tableName: 'media_jobs',
  properties: {
    id: p.string().primary(),
    /** `tts`, `speech` (the OpenAI-compatible endpoint), `video`, `music`. */
    kind: p.string(),
    userId: p.string().index(),
    status: p.string(),
    engine: p.string().nullable(),
    request: p.json<Record<string, unknown>>(),
    result: p.json<Record<string, unknown>>().nullable(),
    credits: p.integer(),
    error: p.text().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
    finishedAt: p.datetime().nullable(),
    callbackUrl: p.text().nullable(),
    callbackStatus: p.string().nullable(),
    callbackAttempts: p.integer().default(0),
    callbackDeliveredAt: p.datetime().nullable(),
    callbackError: p.text().nullable(),
  },
  indexes: [{ properties: ['userId', 'createdAt', 'id'] }],
});

/**
 * An account's secret for signing media job callbacks (Standard Webhooks, `whsec_…`), created on first use. After a
 * rotation the previous secret still signs, alongside the new one, for a grace period (`rotatedAt`).
 */
export const MediaCallbackSecret = defineEntity({
  name: 'MediaCallbackSecret',
  tableName: 'media_callback_secrets',
  properties: {
    userId: p.string().primary(),
    secret: p.string(),
    previousSecret: p.string().nullable(),
    rotatedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
