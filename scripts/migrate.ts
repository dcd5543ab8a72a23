/**
 * `npm run migrate` applies committed migrations to DATABASE_URL.
 * `npm run migrate -- create <name>` generates a migration from the entity diff (developers only).
 */
import { openOrm, migrate } from '../db/orm.ts';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  console.error('DATABASE_URL is required');
  process.exit(1);
}
const orm = await openOrm(databaseUrl);
try {
  if (process.argv[2] === 'create') {
    const result = await orm.migrator.create(undefined, false, process.argv[3] === 'initial', process.argv[3]);
    console.log(result.fileName ? `created ${result.fileName}` : 'no changes');
  } else {
    const applied = await migrate(orm);
    console.log(applied.length ? `applied ${applied.join(', ')}` : 'database is up to date');
  }
} finally {
  await orm.close();
}
