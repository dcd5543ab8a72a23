/** createDatabase/dropDatabase against DATABASE_URL, or the PostgreSQL on 127.0.0.1:5432 when it is unset. */
import { afterAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDatabase, databaseNameOf, dropDatabase, withDatabaseName } from '../../db/databases.ts';

const serverUrl = process.env.DATABASE_URL?.trim() || 'postgres://postgres@127.0.0.1:5432/postgres';
const adminUrl = withDatabaseName(serverUrl, 'postgres');
const prefix = `tessera_dbtest_${randomBytes(4).toString('hex')}`;

async function query(url: string, sql: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql, values);
  } finally {
    await client.end();
  }
}

async function exists(name: string): Promise<boolean> {
  const result = await query(adminUrl, 'SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  return result.rowCount === 1;
}

afterAll(async () => {
  const leftovers = await query(adminUrl, 'SELECT datname FROM pg_database WHERE datname LIKE $1', [`${prefix}%`]);
  for (const row of leftovers.rows as { datname: string }[]) await dropDatabase(adminUrl, row.datname);
});

describe('createDatabase / dropDatabase', () => {
  it('creates a database once and reports whether it did', async () => {
    const name = `${prefix}_a`;
    await expect(createDatabase(adminUrl, name)).resolves.toBe(true);
    await expect(createDatabase(adminUrl, name)).resolves.toBe(false);
    expect(await exists(name)).toBe(true);
    const result = await query(withDatabaseName(serverUrl, name), 'SELECT current_database() AS db');
    expect(result.rows[0]).toEqual({ db: name });
  });

  it('drops a database even while sessions are connected, and tolerates a missing one', async () => {
    const name = `${prefix}_b`;
    await createDatabase(adminUrl, name);
    const session = new pg.Client({ connectionString: withDatabaseName(serverUrl, name) });
    session.on('error', () => undefined);
    await session.connect();
    try {
      await dropDatabase(adminUrl, name);
    } finally {
      await session.end().catch(() => undefined);
    }
    expect(await exists(name)).toBe(false);
    await expect(dropDatabase(adminUrl, name)).resolves.toBeUndefined();
  });

  it('clones a template, also concurrently', async () => {
    const template = `${prefix}_tpl`;
    await createDatabase(adminUrl, template);
    await query(withDatabaseName(serverUrl, template), 'CREATE TABLE marker (id int); INSERT INTO marker VALUES (42)');
    const clones = [1, 2, 3].map((index) => `${prefix}_clone${index}`);
    await Promise.all(clones.map((name) => createDatabase(adminUrl, name, { template })));
    for (const name of clones) {
      const result = await query(withDatabaseName(serverUrl, name), 'SELECT id FROM marker');
      expect(result.rows).toEqual([{ id: 42 }]);
    }
  });

  it('rejects names that are not plain identifiers', async () => {
    for (const bad of ['', 'Robert"; DROP DATABASE x; --', 'has space', '1starts_with_digit', 'x'.repeat(64)]) {
      await expect(createDatabase(adminUrl, bad)).rejects.toThrow(/invalid database name/);
      await expect(dropDatabase(adminUrl, bad)).rejects.toThrow(/invalid database name/);
    }
    await expect(createDatabase(adminUrl, `${prefix}_c`, { template: 'bad name' })).rejects.toThrow(
      /invalid database name/,
    );
    expect(await exists(`${prefix}_c`)).toBe(false);
  });

  it('refuses to drop the database it is connected to', async () => {
    await expect(dropDatabase(adminUrl, databaseNameOf(adminUrl))).rejects.toThrow(/itself/);
  });

  it('maps URLs between databases', () => {
    expect(withDatabaseName('postgres://u:p%40ss@h:5433/one?sslmode=disable', 'two')).toBe(
      'postgres://u:p%40ss@h:5433/two?sslmode=disable',
    );
    expect(databaseNameOf('postgres://h/three')).toBe('three');
  });
});
