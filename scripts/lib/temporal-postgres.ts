/**
 * A Temporal server whose persistence and visibility are PostgreSQL: production's shape (docker-compose.yml runs
 * the same server version from its image), built here from the Go module proxy for the bench's production arm.
 *
 * The server and its schema tool are `go install`ed once into the tool cache (`temporal-server`,
 * `temporal-sql-tool`), at the version the pinned CLI embeds, so the dev server and this one run the same code.
 * The two databases are created and migrated with the schema files of that module version, the config is written
 * under `dataDir`, and the namespace gets Tessera's search attributes, as for the dev server.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Connection, isGrpcServiceError } from '@temporalio/client';
import { ensureGoBinary, findGo } from './go-binary.ts';
import { ensureNamespace, ensureSearchAttributes } from './temporal-server.ts';

const execFileAsync = promisify(execFile);

/** The server version inside the pinned Temporal CLI (v1.5.1). */
export const temporalServerVersion = '1.29.1';
const serverModule = 'go.temporal.io/server';
const grpcNotFound = 5;

export interface TemporalPostgresOptions {
  /** Any database URL on the PostgreSQL server to use (its user must be able to create databases). */
  databaseUrl: string;
  /** Frontend gRPC port; the server's other services take the next eight ports. */
  port: number;
  /** Where the server's config is written. */
  dataDir: string;
  /** Names of the persistence and visibility databases. */
  databases?: { persistence: string; visibility: string };
  namespace?: string;
  /** History shards: a server's fixed partitioning (production clusters use hundreds). Default 4. */
  historyShards?: number;
  log?: (line: string) => void;
  /** A file the server's own output is appended to (`npm run cluster`'s temporal.log); else only kept for errors. */
  logFile?: string;
}

export interface TemporalPostgresServer {
  address: string;
  process: ChildProcess;
  /** Resolves once the server exits, with how (for a supervisor: scripts/lib/supervisor.ts). */
  exited: Promise<string>;
  stop(): Promise<void>;
}

async function schemaDirectory(log: (line: string) => void): Promise<string> {
  const go = await findGo();
  if (!go) throw new Error('Go is needed to fetch the Temporal schema files');
  log(`locating the schema files of ${serverModule}@v${temporalServerVersion}`);
  const { stdout } = await execFileAsync(
    go,
    ['mod', 'download', '-json', `${serverModule}@v${temporalServerVersion}`],
    {
      env: process.env,
      maxBuffer: 1 << 20,
    },
  );
  const { Dir } = JSON.parse(stdout) as { Dir: string };
  return join(Dir, 'schema', 'postgresql', 'v12');
}

function configYaml(
  options: TemporalPostgresOptions,
  url: URL,
  databases: { persistence: string; visibility: string },
) {
  const store = (database: string, maxConns: number) => `
      sql:
        pluginName: postgres12
        databaseName: ${database}
        connectAddr: "${url.hostname}:${url.port || '5432'}"
        connectProtocol: tcp
        user: "${decodeURIComponent(url.username)}"
        password: "${decodeURIComponent(url.password)}"
        maxConns: ${maxConns}
        maxIdleConns: ${maxConns}
        maxConnLifetime: 1h`;
  const p = options.port;
  const service = (grpc: number, membership: number, http?: number) =>
    `\n    rpc:\n      grpcPort: ${grpc}\n      membershipPort: ${membership}\n      bindOnLocalHost: true` +
    (http ? `\n      httpPort: ${http}` : '');
  return `log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: ${options.historyShards ?? 4}
  datastores:
    default:${store(databases.persistence, 20)}
    visibility:${store(databases.visibility, 10)}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
services:
  frontend:${service(p, p + 5, p + 1)}
  history:${service(p + 2, p + 6)}
  matching:${service(p + 3, p + 7)}
  worker:${service(p + 4, p + 8)}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: 127.0.0.1:${p}
dcRedirectionPolicy:
  policy: noop
`;
}

/** Creates and migrates a database with temporal-sql-tool (idempotent). */
async function migrateDatabase(tool: string, url: URL, database: string, versionedDir: string): Promise<void> {
  const base = ['--plugin', 'postgres12', '--ep', url.hostname, '-p', url.port || '5432'];
  base.push('-u', decodeURIComponent(url.username), '--db', database);
  if (url.password) base.push('--pw', decodeURIComponent(url.password));
  const run = (args: string[]) => execFileAsync(tool, [...base, ...args], { maxBuffer: 16 << 20 });
  await run(['create-database']).catch((error: { stderr?: string }) => {
    if (!/already exists/.test(String(error.stderr))) throw error;
  });
  // Version 0.0 once (the tool refuses to set up twice), then every versioned step not applied yet.
  await run(['setup-schema', '-v', '0.0']).catch((error: { stderr?: string }) => {
    if (!/already exists|schema_version/.test(String(error.stderr))) throw error;
  });
  await run(['update-schema', '-d', versionedDir]);
}

/**
 * The server and its schema tool, `go install`ed into the tool cache on first use (minutes: the server is a large
 * build), or the binaries TEMPORAL_SERVER_PATH and TEMPORAL_SQL_TOOL_PATH name.
 */
export async function ensureTemporalPostgresBinaries(
  log: (line: string) => void = () => {},
): Promise<{ server: string; sqlTool: string }> {
  const module = (path: string) => `${serverModule}/${path}@v${temporalServerVersion}`;
  const server = await ensureGoBinary(
    {
      module: module('cmd/server'),
      binary: 'temporal-server',
      installedAs: 'server',
      label: 'the Temporal server',
      overrideVariable: 'TEMPORAL_SERVER_PATH',
    },
    log,
  );
  const sqlTool = await ensureGoBinary(
    {
      module: module('cmd/tools/sql'),
      binary: 'temporal-sql-tool',
      installedAs: 'sql',
      label: 'the Temporal SQL schema tool',
      overrideVariable: 'TEMPORAL_SQL_TOOL_PATH',
    },
    log,
  );
  return { server, sqlTool };
}

export async function startTemporalOnPostgres(options: TemporalPostgresOptions): Promise<TemporalPostgresServer> {
  const log = options.log ?? (() => {});
  const namespace = options.namespace ?? 'default';
  const databases = options.databases ?? { persistence: 'temporal', visibility: 'temporal_visibility' };
  const { server, sqlTool } = await ensureTemporalPostgresBinaries(log);
  const url = new URL(options.databaseUrl);
  const schema = await schemaDirectory(log);
  log(`migrating ${databases.persistence} and ${databases.visibility}`);
  await migrateDatabase(sqlTool, url, databases.persistence, join(schema, 'temporal', 'versioned'));
  await migrateDatabase(sqlTool, url, databases.visibility, join(schema, 'visibility', 'versioned'));

  const configDir = join(options.dataDir, 'config');
  await mkdir(configDir, { recursive: true });
  await writeFile(join(configDir, 'tessera.yaml'), configYaml(options, url, databases));
  const child = spawn(
    server,
    ['--root', options.dataDir, '--config', 'config', '--env', 'tessera', '--allow-no-auth', 'start'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const output: string[] = [];
  const logFile = options.logFile ? createWriteStream(options.logFile, { flags: 'a' }) : null;
  logFile?.on('error', () => undefined);
  const keep = (chunk: Buffer) => {
    logFile?.write(chunk);
    output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    output.splice(0, Math.max(0, output.length - 40));
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => {
      logFile?.end();
      resolve(signal ? `was killed (${signal})` : `exited with code ${code}`);
    }),
  );
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };

  const address = `127.0.0.1:${options.port}`;
  const deadline = Date.now() + 90_000;
  let connection: Connection | undefined;
  try {
    while (!connection) {
      if (child.exitCode !== null) throw new Error(`the Temporal server exited:\n${output.join('\n')}`);
      if (Date.now() > deadline)
        throw new Error(`the Temporal server did not answer at ${address}:\n${output.join('\n')}`);
      try {
        connection = await Connection.connect({ address, connectTimeout: 1_000 });
        await connection.workflowService.getSystemInfo({});
      } catch {
        await connection?.close().catch(() => undefined);
        connection = undefined;
        await sleep(500);
      }
    }
    await ensureNamespace(connection, namespace, log);
    // The operator service's namespace cache refreshes on its own schedule: a new namespace may be unknown there
    // for a few seconds after the frontend already describes it.
    for (let attempt = 1; ; attempt++) {
      try {
        await ensureSearchAttributes(connection, namespace, log);
        break;
      } catch (error) {
        if (!isGrpcServiceError(error) || error.code !== grpcNotFound || attempt >= 60) throw error;
        await sleep(1_000);
      }
    }
  } catch (error) {
    await stop();
    throw error;
  } finally {
    await connection?.close().catch(() => undefined);
  }
  log(`Temporal server on PostgreSQL answering at ${address}`);
  return { address, process: child, exited, stop };
}
