/**
 * `npm run migration:create -- <name>`: writes the migration that brings the schema from the committed snapshot
 * (db/migrations/.snapshot-tessera.json) to the entities (db/entities/), and the new snapshot. Needs `DATABASE_URL`
 * (MikroORM connects, though the diff is against the snapshot, not the database). Review the SQL before committing:
 * what the entities cannot express (extensions, generated columns, triggers, data moves) is written by hand.
 */
import { openOrm } from '../db/orm.ts';

const name = process.argv[2];
if (!name || !/^[a-z0-9-]+$/.test(name)) {
  process.stderr.write('usage: npm run migration:create -- <name, e.g. uploads>\n');
  process.exit(2);
}
const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  process.stderr.write('set DATABASE_URL (any database of the server: only the snapshot is compared)\n');
  process.exit(2);
}
const orm = await openOrm(databaseUrl, { poolMax: 1 });
try {
  const created = await orm.migrator.create(undefined, false, false, name);
  process.stdout.write(created.diff.up.length ? `wrote ${created.fileName}\n` : 'no changes: nothing written\n');
} finally {
  await orm.close();
}
