/** Test databases: one migrated template per run, one clone per test file. */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { dropUserDataDatabase } from '../../activities/user-data/data-database.ts';

/**
 * The run's migrated template: named per run (global setup picks it and hands it to the test workers through
 * the environment), so concurrent runs on one server (tests beside the bench) never rebuild each other's.
 */
export function testTemplateDatabase(): string {
  const name = process.env.TESSERA_TEST_TEMPLATE;
  if (!name) throw new Error('TESSERA_TEST_TEMPLATE is not set: run tests through npm test');
  return name;
}

export function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

/**
 * A fresh database cloned from the migrated template; returns its URL and a drop function, which also drops the users'
 * data database a platform on it may have created (`<name>_data`) and that database's user roles.
 */
export async function cloneTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = process.env.TESSERA_TEST_DATABASE_URL;
  if (!adminUrl) throw new Error('TESSERA_TEST_DATABASE_URL is not set: run tests through npm test');
  const name = `tessera_test_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`create database ${name} template ${testTemplateDatabase()}`);
  } finally {
    await client.end();
  }
  return {
    url: withDatabase(adminUrl, name),
    async drop() {
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      try {
        // The test's own pools may still be closing their connections: pg-pool's end() resolves before each socket
        // has closed, and a forced drop then kills a backend mid-close, whose FATAL reaches the ended pool as an
        // 'error' nobody listens to ("Unhandled error … terminating connection due to administrator command", seen
        // once in CI). They go within moments; what is still connected after that (a platform's) is forced.
        for (const deadline = Date.now() + 5_000; Date.now() < deadline;) {
          const { rows } = await admin.query<{ connected: number }>(
            'select count(*)::int as connected from pg_stat_activity where datname = $1',
            [name],
          );
          if (!rows[0]?.connected) break;
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
        await admin.query(`drop database if exists ${name} with (force)`);
      } finally {
        await admin.end();
      }
      await dropUserDataDatabase(withDatabase(adminUrl, name));
    },
  };
}
