/**
 * Databases on a PostgreSQL server, by name: create (optionally from a template), drop, and connection URLs that point
 * at another database of the same server. Runtime code uses them (each user's data database:
 * activities/user-data/data-database.ts), and so do the scripts that set up a deployment's database
 * (scripts/lib/database.ts) and the tests' clones.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

const identifierPattern = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

function assertIdentifier(name: string): void {
  if (!identifierPattern.test(name)) {
    throw new Error(`invalid database name "${name}": use letters, digits and _ (max 63, not starting with a digit)`);
  }
}

/** The same connection URL pointing at another database on the same server. */
export function withDatabaseName(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(name)}`;
  return parsed.toString();
}

/** The database named by a connection URL ('' when none). */
export function databaseNameOf(url: string): string {
  return decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
}

/** Runs `task` on a connection of its own to `url`, closed after (its errors after the connect are ignored). */
export async function withClient<T>(url: string, task: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await task(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The SQLSTATE of a `pg` error, if it has one. */
export function pgCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : undefined;
}

/**
 * Creates database `name` on the server `adminUrl` connects to (any existing database there, e.g. `postgres`),
 * optionally as a copy of `template`. Returns false when it already existed.
 */
export async function createDatabase(
  adminUrl: string,
  name: string,
  options: { template?: string } = {},
): Promise<boolean> {
  assertIdentifier(name);
  if (options.template !== undefined) assertIdentifier(options.template);
  return withClient(adminUrl, async (client) => {
    const template = options.template ? ` TEMPLATE ${client.escapeIdentifier(options.template)}` : '';
    for (let attempt = 1; ; attempt++) {
      const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (found.rowCount) return false;
      try {
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}${template}`);
        return true;
      } catch (error) {
        const code = pgCode(error);
        // 42P04 duplicate_database / 23505 unique_violation: a concurrent creator won.
        if (code === '42P04' || code === '23505') return false;
        // 55006 object_in_use: the template has other sessions (e.g. a concurrent clone); retry briefly.
        if (code === '55006' && attempt < 20) {
          await sleep(100 * attempt);
          continue;
        }
        throw error;
      }
    }
  });
}

/** Drops database `name` (if it exists) on the server `adminUrl` connects to, disconnecting its sessions. */
export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  assertIdentifier(name);
  if (name === databaseNameOf(adminUrl)) throw new Error(`cannot drop ${name} through a connection to itself`);
  await withClient(adminUrl, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`);
  });
}
