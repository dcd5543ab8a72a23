/** MikroORM configuration and start-up: one ORM per process, a fork per request or activity. */
import { Migrator } from '@mikro-orm/migrations';
import { defineConfig, MikroORM } from '@mikro-orm/postgresql';
import { fileURLToPath } from 'node:url';
import { entities } from './entities/index.ts';
import { usageTables } from './entities/usage-triggers.ts';

const migrationsPath = fileURLToPath(new URL('./migrations', import.meta.url));

export function ormConfig(databaseUrl: string, options: { poolMax?: number } = {}) {
  return defineConfig({
    clientUrl: databaseUrl,
    entities,
    extensions: [Migrator],
    pool: { min: 0, max: options.poolMax ?? 10 },
    migrations: {
      path: migrationsPath,
      glob: '!(*.d).ts',
      snapshot: true,
      snapshotName: '.snapshot-tessera',
      // Only `npm run migration:create` writes the snapshot. Applying migrations must not rewrite a tracked source
      // file from the database it ran on (MikroORM's default does: a test migrating to an earlier step did).
      snapshotOnMigrate: false,
      transactional: true,
      allOrNothing: true,
      emit: 'ts',
      fileName: (timestamp: string, name?: string) => `Migration${timestamp}${name ? '_' + name : ''}`,
    },
    // Tables no entity maps: the A2A SDK's own PostgreSQL stores (migration `a2a`), the RAG index, whose pgvector
    // columns and indexes MikroORM's schema tools do not know (migration `rag`), and the dashboard's usage figures,
    // written by triggers only, never by the ORM (migration `usage-rollups`; db/entities/usage-triggers.ts).
    schemaGenerator: {
      skipTables: ['a2a_tasks', 'a2a_push_configs', 'rag_documents', 'rag_chunks', ...usageTables],
    },
    debug: false,
    allowGlobalContext: false,
  });
}

export type Orm = MikroORM;

export async function openOrm(databaseUrl: string, options: { poolMax?: number } = {}): Promise<MikroORM> {
  return MikroORM.init(ormConfig(databaseUrl, options));
}

/** Applies every committed migration that has not run yet. */
export async function migrate(orm: MikroORM): Promise<string[]> {
  const applied = await orm.migrator.up();
  return applied.map((migration) => migration.name);
}
