/**
 * Makes sure a Temporal server answers at an address: reuses one that is already there, or starts
 * `temporal server start-dev` (the CLI from ensureTemporalCli). Either way the namespace ends up with Tessera's
 * custom search attributes, ready to be used in visibility queries.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection, isGrpcServiceError } from '@temporalio/client';
import { msToTs } from '@temporalio/common';
import proto from '@temporalio/proto';
import { tesseraSearchAttributes } from '../../common/search-attributes.ts';
import { ensureTemporalCli } from './temporal-cli.ts';

export interface TemporalServerOptions {
  /** host:port; default `TEMPORAL_ADDRESS` or 127.0.0.1:7233. */
  address?: string;
  /** Default `TEMPORAL_NAMESPACE` or `default`. */
  namespace?: string;
  /** Web UI port of a dev server started here (default 8233); 0 starts it headless. */
  uiPort?: number;
  /** SQLite file that makes a started dev server persistent (e.g. `.data/temporal.db`); omitted: in memory. */
  dbFile?: string;
  log?: (line: string) => void;
}

export interface TemporalServerHandle {
  address: string;
  namespace: string;
  /** True when this call spawned the dev server (and stop() will end it). */
  startedHere: boolean;
  /** When started here: resolves once the dev server exits, with how (stopped, killed by a signal, its exit code). */
  exited?: Promise<string>;
  stop(): Promise<void>;
}

const { IndexedValueType } = proto.temporal.api.enums.v1;

const grpcNotFound = 5;
const grpcAlreadyExists = 6;
const startTimeoutMs = 60_000;
/** The page size of a new dev-server store (see spawnDevServer). */
const devStorePageSize = 1024;
const stopTimeoutMs = 10_000;

function splitAddress(address: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(address.trim());
  if (!match) throw new Error(`invalid Temporal address "${address}" (expected host:port)`);
  return { host: (match[1] ?? match[2])!, port: Number(match[3]) };
}

/** A connection to a server that answers within ~2 s, or undefined. */
async function tryConnect(address: string): Promise<Connection | undefined> {
  let connection: Connection | undefined;
  try {
    // lazy + ensureConnected rather than connect(): a failed connect() leaves its channel open (retrying forever).
    connection = Connection.lazy({ address, connectTimeout: 1_000 });
    const open = connection;
    await open.ensureConnected();
    await open.withDeadline(Date.now() + 2_000, () => open.workflowService.getSystemInfo({}));
    return connection;
  } catch {
    await connection?.close().catch(() => undefined);
    return undefined;
  }
}

export async function ensureNamespace(
  connection: Connection,
  namespace: string,
  log: (line: string) => void,
): Promise<void> {
  try {
    await connection.workflowService.describeNamespace({ namespace });
    return;
  } catch (error) {
    if (!isGrpcServiceError(error) || error.code !== grpcNotFound) throw error;
  }
  log(`registering Temporal namespace ${namespace}`);
  try {
    await connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs('3 days'),
    });
  } catch (error) {
    if (!isGrpcServiceError(error) || error.code !== grpcAlreadyExists) throw error;
  }
  // The frontend's namespace cache refreshes periodically; wait until the namespace is served.
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await connection.workflowService.describeNamespace({ namespace });
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(500);
    }
  }
}

/**
 * Creates the missing custom search attributes and waits until they are usable: listed by the operator API and
 * accepted in a visibility query (the frontend validates queries against its cached namespace mapping).
 */
export async function ensureSearchAttributes(
  connection: Connection,
  namespace: string,
  log: (line: string) => void = () => {},
): Promise<void> {
  const listed = await connection.operatorService.listSearchAttributes({ namespace });
  const existing = { ...listed.customAttributes, ...listed.systemAttributes };
  const missing = tesseraSearchAttributes.filter((key) => !(key.name in existing));
  if (missing.length > 0) {
    log(`creating Temporal search attributes ${missing.map((key) => key.name).join(', ')} in ${namespace}`);
    try {
      await connection.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: Object.fromEntries(
          missing.map((key) => [key.name, IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD] as const),
        ),
      });
    } catch (error) {
      // A concurrent caller created them first.
      if (!isGrpcServiceError(error) || error.code !== grpcAlreadyExists) throw error;
    }
  }
  for (const key of tesseraSearchAttributes) {
    const type = existing[key.name];
    if (type !== undefined && type !== IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD) {
      throw new Error(`search attribute ${key.name} exists in ${namespace} with type ${type}, expected Keyword`);
    }
  }

  const query = tesseraSearchAttributes.map((key) => `${key.name} = '_'`).join(' AND ');
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const current = await connection.operatorService.listSearchAttributes({ namespace });
      const names = Object.keys(current.customAttributes ?? {});
      if (tesseraSearchAttributes.every((key) => names.includes(key.name))) {
        await connection.workflowService.countWorkflowExecutions({ namespace, query });
        return;
      }
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    if (Date.now() > deadline) {
      throw new Error(`search attributes ${tesseraSearchAttributes.map((key) => key.name).join(', ')} not ready`);
    }
    await sleep(250);
  }
}

/** The pre-allocated search attribute slots (`Keyword01`…) that some namespace's custom attributes occupy. */
async function registeredSlots(connection: Connection): Promise<Set<string>> {
  const slots = new Set<string>();
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await connection.workflowService.listNamespaces({ pageSize: 100, nextPageToken });
    for (const namespace of page.namespaces ?? []) {
      for (const field of Object.keys(namespace.config?.customSearchAttributeAliases ?? {})) slots.add(field);
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return slots;
}

interface DevServer {
  child: ChildProcess;
  exited: Promise<void>;
  output: string[];
  /** Set once stop() began: shutdown chatter is kept for diagnostics but not logged. */
  stopping: boolean;
}

function spawnDevServer(
  cli: string,
  options: { host: string; port: number; uiPort: number; namespace: string; dbFile?: string },
  log: (line: string) => void,
): DevServer {
  const args = ['server', 'start-dev', '--ip', options.host, '--port', String(options.port), '--log-level', 'warn'];
  if (options.uiPort > 0) args.push('--ui-port', String(options.uiPort));
  else args.push('--headless');
  // WAL with synchronous=NORMAL: a commit survives the server process being killed (it is in the WAL, which the OS
  // holds), and the file stays consistent on power loss, which may roll back the last commits (docs/operations.md,
  // "Durability").
  // The default (rollback journal, a sync per commit) cost most of a completion's latency and disk writes.
  //
  // Pages of 1 KiB instead of 4: a commit writes every page it touches to the WAL whole, and most of a completion's
  // pages are index leaves where one small entry changes (one visibility write touched about 46 pages), so the
  // bytes a completion writes fell from about 350 KB of WAL to about 120 (docs/benchmarks.md, "Disk per
  // completion"). The page size of a file is fixed when its first table is created, and only before WAL mode is set:
  // the SQLite plugin applies the pragmas sorted by name, byte-wise, and SQLite's pragma names ignore case, so the
  // upper-case PAGE_SIZE runs before journal_mode. A file created before this keeps its 4 KiB pages.
  // A checkpoint every 16,000 pages (16 MiB of WAL, about a second at full load) rather than every 1,000: a page
  // rewritten by many commits between two checkpoints is copied to the database file once.
  if (options.dbFile) {
    args.push('--db-filename', options.dbFile);
    args.push('--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=normal');
    args.push('--sqlite-pragma', `PAGE_SIZE=${devStorePageSize}`, '--sqlite-pragma', 'wal_autocheckpoint=16000');
  }
  if (options.namespace !== 'default') args.push('--namespace', options.namespace);
  // The visibility queue reads new tasks at most twice a second (Temporal's default: 20): a completion that closes
  // within that half second gets no "started" visibility row at all (the task finds it closed and skips the write),
  // only its "closed" one, and the rest arrive in batches rather than between every start. The Web UI may show a
  // workflow up to about half a second late; describe, queries and results are unaffected.
  args.push('--dynamic-config-value', 'history.visibilityProcessorMaxPollRPS=2');
  // One visibility writer instead of 512: a batch is written one row at a time, so a workflow start (on the same
  // single SQLite connection) waits behind one visibility write rather than the whole batch (p99 at one client:
  // 63 ms → 29 ms).
  args.push('--dynamic-config-value', 'history.visibilityProcessorSchedulerWorkerCount=1');
  // The Go collector runs a third as often (its default is 100): 6 to 8 % less CPU for some more memory. A soft
  // limit of 256 MiB makes it collect sooner only when the heap would grow past that: after a minute at full load the
  // server held 458 MiB resident without it (issue 29's memory goal; docs/benchmarks.md, "Memory").
  const child = spawn(cli, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { GOGC: '300', GOMEMLIMIT: '256MiB', ...process.env },
  });
  const output: string[] = [];
  const server: DevServer = { child, exited: Promise.resolve(), output, stopping: false };
  const onData = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      const trimmed = line.trimEnd();
      if (!trimmed) continue;
      output.push(trimmed);
      if (output.length > 60) output.shift();
      if (!server.stopping) log(`[temporal] ${trimmed}`);
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  server.exited = new Promise<void>((resolveExit) => {
    child.on('error', (error) => {
      output.push(String(error));
      resolveExit();
    });
    child.on('close', () => resolveExit());
  });
  return server;
}

async function stopChild(server: DevServer): Promise<void> {
  const { child } = server;
  if (child.exitCode !== null || child.signalCode !== null) return;
  server.stopping = true;
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    server.exited.then(() => false),
    new Promise<boolean>((resolveTimeout) => {
      timer = setTimeout(() => resolveTimeout(true), stopTimeoutMs);
    }),
  ]);
  clearTimeout(timer);
  if (timedOut) {
    child.kill('SIGKILL');
    await server.exited;
  }
}

/** Reuses the Temporal server at the address, or starts a dev server there; see TemporalServerOptions. */
export async function ensureTemporalServer(options: TemporalServerOptions = {}): Promise<TemporalServerHandle> {
  const log = options.log ?? (() => {});
  const address = options.address ?? (process.env.TEMPORAL_ADDRESS?.trim() || '127.0.0.1:7233');
  const namespace = options.namespace ?? (process.env.TEMPORAL_NAMESPACE?.trim() || 'default');
  const { host, port } = splitAddress(address);

  let connection = await tryConnect(address);
  let server: DevServer | undefined;
  let storeFile: string | undefined;
  let onExit: (() => void) | undefined;

  const stop = async () => {
    if (onExit) process.removeListener('exit', onExit);
    if (server) await stopChild(server);
  };

  try {
    if (connection) {
      log(`using the Temporal server already running at ${address}`);
    } else {
      const cli = await ensureTemporalCli(log);
      const dbFile = options.dbFile ? resolve(options.dbFile) : undefined;
      if (dbFile) await mkdir(dirname(dbFile), { recursive: true });
      log(`starting Temporal dev server at ${address}${dbFile ? ` (data in ${dbFile})` : ' (in memory)'}`);
      const started = spawnDevServer(cli, { host, port, uiPort: options.uiPort ?? 8233, namespace, dbFile }, log);
      server = started;
      storeFile = dbFile;
      // Never leave the dev server behind when this process exits without calling stop().
      onExit = () => {
        started.child.kill('SIGTERM');
      };
      process.on('exit', onExit);

      const deadline = Date.now() + startTimeoutMs;
      let childExited = false;
      void started.exited.then(() => {
        childExited = true;
      });
      while (!connection) {
        connection = await tryConnect(address);
        if (connection) break;
        if (childExited) {
          // Lost a race with another starter (port taken by a server that now answers)?
          connection = await tryConnect(address);
          if (connection) {
            log(`another process started a Temporal server at ${address}; using it`);
            process.removeListener('exit', onExit);
            server = undefined;
            onExit = undefined;
            break;
          }
          throw new Error(
            `temporal server start-dev exited (code ${started.child.exitCode ?? started.child.signalCode}) before ` +
              `answering at ${address}:\n${started.output.slice(-20).join('\n')}`,
          );
        }
        if (Date.now() > deadline) {
          throw new Error(
            `temporal server start-dev did not answer at ${address} within ${startTimeoutMs / 1000} s:\n` +
              started.output.slice(-20).join('\n'),
          );
        }
        await sleep(250);
      }
    }

    await ensureNamespace(connection, namespace, log);
    await ensureSearchAttributes(connection, namespace, log);
    if (storeFile && server) {
      // Loaded here: node:sqlite is unknown to Jest's module loader, and tests run in-memory dev servers.
      const { reconcileVisibilityIndexes } = await import('./temporal-dev-store.ts');
      const { dropped, created, pageSize } = reconcileVisibilityIndexes(storeFile, await registeredSlots(connection));
      if (dropped.length || created.length) {
        log(
          `visibility indexes: dropped ${dropped.length} unused, created ${created.length} for registered attributes`,
        );
      }
      if (pageSize !== devStorePageSize) {
        log(
          `${storeFile} has pages of ${pageSize} bytes (a store created before Tessera chose ${devStorePageSize}): ` +
            'it works, and writes about three times the bytes per workflow (docs/operations.md, "Durability")',
        );
      }
    }
  } catch (error) {
    await connection?.close().catch(() => undefined);
    await stop();
    throw error;
  }
  await connection.close();

  const started = server;
  const exited = started?.exited.then(() => {
    const { exitCode, signalCode } = started.child;
    return signalCode ? `was killed (${signalCode})` : `exited with code ${exitCode}`;
  });
  return { address, namespace, startedHere: started !== undefined, ...(exited ? { exited } : {}), stop };
}
