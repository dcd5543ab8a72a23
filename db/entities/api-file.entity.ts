import { defineEntity, p } from '@mikro-orm/core';

/**
 * A file of the gateway's Files API (`/v1/files`, OpenAI's): a JSONL file of requests uploaded with `purpose: batch`
 * (checked line by line when it is taken). Its bytes are in the platform's one byte store (the media store: local disk
 * or S3) under `files/<user id>/<file id>` (`storageKey`); `lineCount` is its number of requests. Owner-only; written
 * and read by activities/files/api-files.ts. Not the agent service's uploads (db/entities/upload.entity.ts), which are
 * documents typed by their bytes and indexed for search.
 */
export const ApiFile = defineEntity({
  name: 'ApiFile',
  tableName: 'api_files',
  properties: {
    id: p.string().primary(),
    userId: p.string(),
    purpose: p.string(),
    filename: p.string(),
    bytes: p.bigint('number'),
    lineCount: p.integer(),
    storageKey: p.string(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [{ properties: ['userId', 'createdAt'] }],
});
