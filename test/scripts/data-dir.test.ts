/**
 * The local state's directory (scripts/lib/data-dir.ts) is read from one place by every script that opens it:
 * `npm run admin` on a data directory moved with TESSERA_DATA_DIR uses the embedded PostgreSQL that `npm start`
 * runs there, rather than starting one of its own under `.data/` (which failed: the port was taken by `npm start`'s).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { dataDirectory } from '../../scripts/lib/data-dir.ts';
import { ensureDatabase, type DatabaseHandle } from '../../scripts/lib/database.ts';
import { freePorts } from '../../scripts/lib/processes.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const execFileAsync = promisify(execFile);

describe('dataDirectory', () => {
  it('is TESSERA_DATA_DIR when set (trimmed, made absolute), else .data at the repository root', () => {
    expect(dataDirectory({})).toBe(join(root, '.data'));
    expect(dataDirectory({ TESSERA_DATA_DIR: '  ' })).toBe(join(root, '.data'));
    expect(dataDirectory({ TESSERA_DATA_DIR: ' /srv/tessera-state ' })).toBe('/srv/tessera-state');
    expect(dataDirectory({ TESSERA_DATA_DIR: 'moved/state' })).toBe(resolve('moved/state'));
  });
});

describe('npm run admin on a moved data directory', () => {
  let dataDir: string;
  let port: number;
  let database: DatabaseHandle | undefined;
  const saved = { DATABASE_URL: process.env.DATABASE_URL, EMBEDDED_POSTGRES_PORT: process.env.EMBEDDED_POSTGRES_PORT };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'tessera-moved-data-'));
    // As root, the embedded PostgreSQL runs as an unprivileged user, which must be able to enter the directory.
    await chmod(dataDir, 0o755);
    [port] = (await freePorts(1)) as [number];
    // What `npm start` does with TESSERA_DATA_DIR=<dataDir>: the embedded PostgreSQL under it, left running.
    delete process.env.DATABASE_URL;
    process.env.EMBEDDED_POSTGRES_PORT = String(port);
    try {
      database = await ensureDatabase({ dataDir });
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  }, 180_000);

  afterAll(async () => {
    await database?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('creates a key in the database that `npm start` runs there', async () => {
    const { DATABASE_URL: _url, NODE_OPTIONS: _options, ...environment } = process.env;
    const email = `moved-${port}@example.com`;
    const result: { code?: number; stdout?: string; stderr?: string } = await execFileAsync(
      process.execPath,
      ['scripts/admin.ts', 'create-key', '--email', email, '--plan', 'pro'],
      {
        cwd: root,
        env: { ...environment, TESSERA_DATA_DIR: dataDir, EMBEDDED_POSTGRES_PORT: String(port) },
        timeout: 120_000,
      },
    ).catch((error: { code?: number; stdout?: string; stderr?: string }) => error);
    expect({ code: result.code ?? 0, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    // The key is printed last, after the migrations' log lines of a database that had none.
    const stdout = result.stdout ?? '';
    const created = JSON.parse(stdout.slice(stdout.lastIndexOf('{\n'))) as { email: string; plan: string; key: string };
    expect(created).toMatchObject({ email, plan: 'pro', key: expect.stringMatching(/^te_/) });

    // The user is in the moved directory's database.
    const client = new pg.Client({ connectionString: database!.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ plan: string }>('select plan from users where email = $1', [email]);
      expect(rows).toEqual([{ plan: 'pro' }]);
    } finally {
      await client.end();
    }
  }, 180_000);
});
