/** Committed migrations build the whole schema on an empty database and match the entities exactly. */
import { afterAll, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { migrate, openOrm } from '../../db/orm.ts';
import { createDatabase, dropDatabase } from '../../db/databases.ts';
import { withDatabase } from '../helpers/databases.ts';

const adminUrl = process.env.TESSERA_TEST_DATABASE_URL!;
const name = `tessera_migrations_${randomBytes(4).toString('hex')}`;

afterAll(async () => {
  await dropDatabase(adminUrl, name);
});

it('applies every migration to an empty database, once, leaving no drift from the entities', async () => {
  await createDatabase(adminUrl, name);
  const orm = await openOrm(withDatabase(adminUrl, name), { poolMax: 1 });
  try {
    const applied = await migrate(orm);
    expect(applied.length).toBeGreaterThan(0);
    expect(await migrate(orm)).toEqual([]);
    const tables = await orm.em
      .fork()
      .execute<Array<{ table_name: string }>>(
        "select table_name from information_schema.tables where table_schema = 'public' order by table_name",
      );
    expect(tables.map((table) => table.table_name)).toEqual(
      expect.arrayContaining(['api_keys', 'provider_breakers', 'stream_chunks', 'users']),
    );
    expect((await orm.schema.getUpdateSchemaSQL({ wrap: false })).trim()).toBe('');
  } finally {
    await orm.close();
  }
});
