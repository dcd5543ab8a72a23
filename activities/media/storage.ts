/**
 * The media files this deployment has, from its settings: an S3-compatible bucket when `MEDIA_S3_BUCKET` is set,
 * otherwise the local disk under `MEDIA_DIR`; kept `MEDIA_FILE_TTL_DAYS` days either way (activities/media/files.ts).
 */
import type { Settings } from '../../config/settings.ts';
import { bucketDescription, dayMs, MediaFiles, type MediaStore } from './files.ts';
import { loadOnce } from '../../process/load-once.ts';
import type { S3MediaStore, S3StoreOptions } from './s3-store.ts';

export type MediaStorageSettings = Pick<
  Settings,
  | 'MEDIA_DIR'
  | 'MEDIA_FILE_TTL_DAYS'
  | 'MEDIA_S3_BUCKET'
  | 'MEDIA_S3_ENDPOINT'
  | 'MEDIA_S3_REGION'
  | 'MEDIA_S3_ACCESS_KEY_ID'
  | 'MEDIA_S3_SECRET_ACCESS_KEY'
  | 'MEDIA_S3_FORCE_PATH_STYLE'
  | 'MEDIA_S3_PREFIX'
>;

export function createMediaFiles(settings: MediaStorageSettings): MediaFiles {
  const ttlMs = Math.round(settings.MEDIA_FILE_TTL_DAYS * dayMs);
  if (!settings.MEDIA_S3_BUCKET) return new MediaFiles(settings.MEDIA_DIR, { ttlMs });
  if (Boolean(settings.MEDIA_S3_ACCESS_KEY_ID) !== Boolean(settings.MEDIA_S3_SECRET_ACCESS_KEY)) {
    throw new Error('set both MEDIA_S3_ACCESS_KEY_ID and MEDIA_S3_SECRET_ACCESS_KEY, or neither');
  }
  const store = new LazyS3Store({
    bucket: settings.MEDIA_S3_BUCKET,
    region: settings.MEDIA_S3_REGION,
    forcePathStyle: settings.MEDIA_S3_FORCE_PATH_STYLE ?? settings.MEDIA_S3_ENDPOINT !== undefined,
    prefix: settings.MEDIA_S3_PREFIX,
    ...(settings.MEDIA_S3_ENDPOINT ? { endpoint: settings.MEDIA_S3_ENDPOINT } : {}),
    ...(settings.MEDIA_S3_ACCESS_KEY_ID ? { accessKeyId: settings.MEDIA_S3_ACCESS_KEY_ID } : {}),
    ...(settings.MEDIA_S3_SECRET_ACCESS_KEY ? { secretAccessKey: settings.MEDIA_S3_SECRET_ACCESS_KEY } : {}),
  });
  return new MediaFiles(store, { ttlMs });
}

/**
 * The bucket, with the S3 SDK (about 30 MiB) imported at the first file stored or served, not at the process's start
 * (issue 29): the store's calls wait for it once.
 */
class LazyS3Store implements MediaStore {
  readonly description: string;
  private readonly opened: () => Promise<S3MediaStore>;

  constructor(options: S3StoreOptions) {
    this.description = bucketDescription(options);
    this.opened = loadOnce(() => import('./s3-store.ts').then(({ S3MediaStore }) => new S3MediaStore(options)));
  }

  async put(key: string, bytes: Uint8Array, contentType: string): Promise<void> {
    await (await this.opened()).put(key, bytes, contentType);
  }

  async putFile(key: string, path: string, contentType: string): Promise<void> {
    await (await this.opened()).putFile(key, path, contentType);
  }

  async get(key: string) {
    return (await this.opened()).get(key);
  }

  async delete(key: string): Promise<void> {
    await (await this.opened()).delete(key);
  }

  async *list(folder: string): AsyncIterable<{ key: string; storedAt: Date }> {
    yield* (await this.opened()).list(folder);
  }
}
