/**
 * Locates (or builds once, with `go install`) the Temporal CLI whose `server start-dev` backs local runs and tests.
 *
 * Order: `TEMPORAL_CLI_PATH` (must exist) → the cache `${XDG_CACHE_HOME:-~/.cache}/tessera/bin/temporal` →
 * `go install github.com/temporalio/cli/cmd/temporal@v1.5.1` into that cache directory. Later CLI tags cannot be
 * `go install`ed (replace directives), so the version is pinned here.
 */
import { ensureGoBinary, toolCacheDir } from './go-binary.ts';

export const temporalCliVersion = '1.5.1';
export const temporalCliModule = `github.com/temporalio/cli/cmd/temporal@v${temporalCliVersion}`;

/** The directory the CLI is cached in (and built into). */
export const temporalCliCacheDir = toolCacheDir;

/**
 * Returns the path of a Temporal CLI binary, building it with `go install` on first use (a few minutes).
 * Concurrent callers (e.g. `npm start` and `npm test` at once) share one build through a lock file.
 */
export function ensureTemporalCli(log: (line: string) => void = () => {}): Promise<string> {
  return ensureGoBinary(
    { module: temporalCliModule, binary: 'temporal', label: 'the Temporal CLI', overrideVariable: 'TEMPORAL_CLI_PATH' },
    log,
  );
}
