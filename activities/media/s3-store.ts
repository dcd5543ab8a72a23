/**
 * Media files in an S3-compatible bucket (AWS S3, MinIO, Cloudflare R2, Ceph, …) through the AWS SDK v3: used when
 * `MEDIA_S3_BUCKET` is set (activities/media/files.ts has the rules; this only moves bytes). Keys are
 * `<MEDIA_S3_PREFIX><folder>/<name>`. The gateway still serves every file at `/api/v1/media/files/{name}`, streaming
 * the object through: URLs do not change with the backend, and who may fetch what (the unguessable name, the expiry)
 * is decided in one place for both backends, not by bucket policies or presigned URLs.
 *
 * Only calls every S3-compatible store implements are used: PutObject, GetObject, DeleteObject and ListObjectsV2
 * (the sweep reads LastModified rather than relying on lifecycle rules, which not every store has). Checksums are
 * sent and checked only where S3 requires them: the SDK's default since 2025 adds CRC32 trailers that many
 * S3-compatible stores reject.
 */
import {
  DeleteObjectCommand,
  GetObjectCommand,
  paginateListObjectsV2,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { bucketDescription, type MediaStore, type StoredObject } from './files.ts';

export interface S3StoreOptions {
  bucket: string;
  /** The S3-compatible endpoint (`http://minio:9000`); unset: AWS S3 of `region`. */
  endpoint?: string;
  region: string;
  /** Unset: the SDK's default chain (environment, instance or task role, …). */
  accessKeyId?: string;
  secretAccessKey?: string;
  /** `bucket` in the path rather than the host name (MinIO and most self-hosted stores want it). */
  forcePathStyle: boolean;
  /** Put before every key, for a bucket shared with other data (e.g. `tessera/`). */
  prefix?: string;
}

export class S3MediaStore implements MediaStore {
  readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  readonly description: string;

  constructor(options: S3StoreOptions) {
    this.bucket = options.bucket;
    this.prefix = options.prefix ?? '';
    this.description = bucketDescription(options);
    this.client = new S3Client({
      region: options.region,
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      forcePathStyle: options.forcePathStyle,
      ...(options.accessKeyId && options.secretAccessKey
        ? { credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey } }
        : {}),
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  async put(key: string, bytes: Uint8Array, contentType: string): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: this.prefix + key,
        Body: bytes,
        ContentType: contentType,
        ContentLength: bytes.byteLength,
      }),
    );
  }

  async putFile(key: string, path: string, contentType: string): Promise<void> {
    const { size } = await stat(path);
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: this.prefix + key,
        Body: createReadStream(path),
        ContentType: contentType,
        ContentLength: size,
      }),
    );
  }

  async get(key: string): Promise<StoredObject | null> {
    try {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }));
      // In Node the body is the response's IncomingMessage: a Readable, streamed as it arrives.
      const stream = object.Body as Readable;
      if (object.ContentLength === undefined || !object.LastModified) {
        stream.destroy();
        throw new Error(`${this.description} answered ${key} without its length or time`);
      }
      return { stream, size: object.ContentLength, storedAt: object.LastModified };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }));
  }

  async *list(folder: string): AsyncIterable<{ key: string; storedAt: Date }> {
    const pages = paginateListObjectsV2(
      { client: this.client, pageSize: 1000 },
      { Bucket: this.bucket, Prefix: `${this.prefix}${folder}/` },
    );
    for await (const page of pages) {
      for (const object of page.Contents ?? []) {
        if (!object.Key || !object.LastModified) continue;
        yield { key: object.Key.slice(this.prefix.length), storedAt: object.LastModified };
      }
    }
  }
}

function isNotFound(error: unknown): boolean {
  if (!(error instanceof S3ServiceException)) return false;
  return error.name === 'NoSuchKey' || error.name === 'NotFound' || error.$metadata.httpStatusCode === 404;
}
