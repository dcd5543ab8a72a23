/**
 * gofakes3 (https://github.com/johannesboyne/gofakes3, MIT): an S3-compatible server in Go, speaking S3's HTTP API
 * (PutObject, GetObject, DeleteObject, ListObjectsV2, …) with objects in memory. The media storage tests point the
 * S3 backend at it on loopback, so the AWS SDK's real requests and responses go over the wire; docker-compose.yml
 * runs MinIO instead. gofakes3 does not check signatures: credentials are tested by a real store only.
 *
 * Located like the Temporal CLI: `GOFAKES3_PATH` (must exist) → the cache
 * `${XDG_CACHE_HOME:-~/.cache}/tessera/bin/gofakes3` → `go install github.com/johannesboyne/gofakes3/cmd/gofakes3@v…`
 * into that cache directory, once, under a lock file shared by concurrent callers.
 */
import { startChildServer } from './child-server.ts';
import { ensureGoBinary } from './go-binary.ts';

export const gofakes3Version = '1.2.0';
export const gofakes3Module = `github.com/johannesboyne/gofakes3/cmd/gofakes3@v${gofakes3Version}`;

/** Returns the path of a gofakes3 binary, building it with `go install` on first use (half a minute). */
export function ensureGofakes3(log: (line: string) => void = () => {}): Promise<string> {
  return ensureGoBinary(
    { module: gofakes3Module, binary: 'gofakes3', label: 'gofakes3', overrideVariable: 'GOFAKES3_PATH' },
    log,
  );
}

export interface RunningS3Server {
  /** Its endpoint, e.g. `http://127.0.0.1:40123`: the value for MEDIA_S3_ENDPOINT (path-style addressing). */
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts gofakes3 on 127.0.0.1 with a system-chosen port, objects in memory and `bucket` created, and resolves once it
 * listens.
 */
export async function startS3Server(
  options: { bucket: string; log?: (line: string) => void; startTimeoutMs?: number } = { bucket: 'media' },
): Promise<RunningS3Server> {
  const log = options.log ?? (() => {});
  const binary = await ensureGofakes3(log);
  return startChildServer(
    binary,
    ['-host', '127.0.0.1:0', '-backend', 'memory', '-initialbucket', options.bucket, '-quiet'],
    {
      label: 'gofakes3',
      portPattern: /using port: (\d+)/,
      startTimeoutMs: options.startTimeoutMs,
    },
  );
}
