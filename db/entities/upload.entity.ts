import { defineEntity, p } from '@mikro-orm/core';

/**
 * A file a user uploaded (agent service spec §2 File, §4.9): a PDF, an Excel workbook, a CSV or an image, its kind
 * decided from its bytes. The bytes live in the media store (local disk or S3) under `storageKey`
 * (`uploads/<user id>/<file id>`), never expiring; this row is the file's existence: listing, ownership, the
 * account's quota (the sum of `bytes`). Deleting the file deletes the row, the object and everything indexed from it.
 * Written and read by activities/uploads/upload-store.ts (plain SQL).
 */
export const Upload = defineEntity({
  name: 'Upload',
  tableName: 'uploads',
  properties: {
    /** `file_` + 24 random base64url characters. */
    id: p.string().primary(),
    userId: p.string(),
    /** The name the client gave (a display name: the type never comes from it). */
    fileName: p.string(),
    /** `pdf`, `xlsx`, `csv`, `png`, `jpeg`, `webp` or `gif`. */
    kind: p.string(),
    contentType: p.string(),
    bytes: p.bigint('number'),
    /** Hex SHA-256 of the bytes. */
    sha256: p.string(),
    storageKey: p.string(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [{ properties: ['userId', 'createdAt'] }],
});
