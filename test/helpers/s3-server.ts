/** An S3-compatible server (gofakes3, scripts/lib/s3-server.ts) per test file, and the settings that point at it. */
import { S3Client } from '@aws-sdk/client-s3';
import { startS3Server, type RunningS3Server } from '../../scripts/lib/s3-server.ts';

export const testBucket = 'tessera-media-test';

/** Building gofakes3 on a fresh machine takes about half a minute: the beforeAll that starts one allows this. */
export const s3ServerStartTimeoutMs = 240_000;

export function startTestS3Server(): Promise<RunningS3Server> {
  return startS3Server({ bucket: testBucket, log: (line) => process.stderr.write(`[gofakes3] ${line}\n`) });
}

/** Gateway environment for media files in the test bucket at `url`. */
export function s3Settings(url: string): Record<string, string> {
  return {
    MEDIA_S3_BUCKET: testBucket,
    MEDIA_S3_ENDPOINT: url,
    MEDIA_S3_REGION: 'us-east-1',
    MEDIA_S3_ACCESS_KEY_ID: 'tessera-test',
    MEDIA_S3_SECRET_ACCESS_KEY: 'tessera-test-secret',
    MEDIA_S3_FORCE_PATH_STYLE: 'true',
  };
}

/** A client of the test server, to look into the bucket behind the gateway's back. */
export function testS3Client(url: string): S3Client {
  return new S3Client({
    endpoint: url,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'tessera-test', secretAccessKey: 'tessera-test-secret' },
  });
}
