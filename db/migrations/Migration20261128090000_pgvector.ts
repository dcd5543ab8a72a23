import { Migration } from '@mikro-orm/migrations';

/**
 * pgvector's `vector` extension (the vector type, its distance operators, HNSW and IVFFlat indexes) in this database,
 * for the tables of embeddings that later migrations create.
 *
 * The server must offer the extension: `npm start` and `npm test` install it into a PostgreSQL on their own machine
 * (scripts/lib/pgvector.ts); in production it comes with the server (the compose file's pgvector/pgvector image, or a
 * managed service that allows it: docs/operations.md, "Vectors (pgvector)"). Where it does not, this migration stops
 * with that advice instead of PostgreSQL's bare "could not open extension control file". pgvector is not a trusted
 * extension: creating it takes a superuser (or the provider's admin role); once an administrator has created it, any
 * owner of the database can run this migration.
 */
export class Migration20261128090000_pgvector extends Migration {
  override name = 'Migration20261128090000_pgvector';

  override async up(): Promise<void> {
    const installed = await this.execute(`select 1 from pg_extension where extname = 'vector'`);
    if (installed.length > 0) return;
    const available = await this.execute(`select 1 from pg_available_extensions where name = 'vector'`);
    if (available.length === 0) {
      const [server] = await this.execute(
        `select current_setting('server_version') as version, current_setting('server_version_num')::int / 10000 as major`,
      );
      const major = String(server?.major ?? '<major>');
      throw new Error(
        `this PostgreSQL server (${String(server?.version ?? 'unknown version')}) does not offer the pgvector ` +
          `extension ("vector"), which Tessera needs for embeddings. Install it on the server, then migrate again: ` +
          `Debian/Ubuntu: package postgresql-${major}-pgvector from the PostgreSQL project's APT repository (PGDG); ` +
          `Docker: image pgvector/pgvector:pg${major}; Amazon RDS/Aurora, Google Cloud SQL, Supabase: run ` +
          `"create extension vector" as the admin user; Azure Database for PostgreSQL: add VECTOR to the ` +
          `azure.extensions server parameter first. (docs/operations.md, "Vectors (pgvector)".)`,
      );
    }
    try {
      await this.execute(`create extension if not exists vector`);
    } catch (error) {
      // 42501 insufficient_privilege: pgvector is not a trusted extension.
      if ((error as { code?: string }).code === '42501') {
        throw new Error(
          `creating the pgvector extension needs a superuser (or the provider's admin role, e.g. rds_superuser, ` +
            `cloudsqlsuperuser, azure_pg_admin): run "create extension vector" once in this database as that user, ` +
            `then migrate again. (${(error as Error).message})`,
          { cause: error },
        );
      }
      throw error;
    }
  }

  override down(): void | Promise<void> {
    this.addSql(`drop extension if exists vector;`);
  }
}
