/**
 * Where the local state lives (the embedded PostgreSQL's cluster, the Temporal dev server's store, the generated
 * master and token keys, sandboxes, media): `TESSERA_DATA_DIR` when set, else `.data/` at the repository's root.
 * Every script that opens that state asks here, so `npm run admin` finds the database that `npm start` runs on a
 * moved data directory (the bench and the platform tests move it).
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root, with a trailing slash. */
const root = fileURLToPath(new URL('../..', import.meta.url));

/** The local state's directory, absolute: `TESSERA_DATA_DIR` (relative to the working directory), else `.data/`. */
export function dataDirectory(environment: Record<string, string | undefined> = process.env): string {
  return resolve(environment.TESSERA_DATA_DIR?.trim() || `${root}.data`);
}
