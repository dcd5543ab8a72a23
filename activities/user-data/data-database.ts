/**
 * The users' data database (docs/files-and-rag.md, read-only SQL): where the tables a user imports from CSV and
 * Excel files live, and where `POST /sql/query` and the `sql_query` tool read them.
 *
 * - **A database of its own**, separate from the platform's (`USER_DATA_DATABASE_URL`; by default the platform's
 *   database name with `_data` on the same server, created on demand with the platform's credentials), so the
 *   platform's tables are not even in the catalog a query can see.
 * - **One schema per user** (`userdata_<16 hex of SHA-256 of the user id>`), owned by the platform's role, which
 *   creates and loads the tables (table-import.ts).
 * - **One login role per user** (`tessera_data_<database hash>_<user hash>`) that owns nothing and may do nothing but
 *   connect to this database, use its own schema and read its own tables. Queries run *logged in as that role*, not
 *   through `SET ROLE` from the platform's login: a session can always `RESET ROLE` (or `set_config('role', …)`) back
 *   to the role it logged in as, so a SET ROLE would not hold against a statement the parser let through. The role's
 *   password is derived (HMAC-SHA-256 keyed with the platform's password for this database, sent to the server as a
 *   SCRAM verifier so no log shows it) and written again the first time each process uses the role, so every process
 *   knows it and a rotated platform password heals itself. With a platform URL without a password (trust
 *   authentication), the roles have none either.
 * - **Hardening of the database** when it is first used: PUBLIC loses CONNECT and TEMP on it and everything on the
 *   `public` schema, so a user role can create nothing anywhere; when the platform's role is a superuser (the embedded
 *   PostgreSQL, the tests) PUBLIC also loses SELECT on the system catalogs and `information_schema`, so even a query
 *   the parser missed cannot list other users' schemas, tables or columns. On a managed PostgreSQL without a
 *   superuser the parser's refusal of `pg_*` tables and schema-qualified names guards the catalog.
 * - **Every query** runs as one statement through the extended protocol (PostgreSQL itself then refuses a second
 *   statement) in `BEGIN READ ONLY` with `statement_timeout`, `search_path` (the user's schema only) and a UTC
 *   `TimeZone` set for that transaction alone, reads at most the row limit plus one through a cursor, and is always
 *   rolled back.
 *
 * What the platform's role needs: CREATEDB (or an operator creates the database and sets USER_DATA_DATABASE_URL, the
 * database owned by the platform's role) and CREATEROLE (it creates and alters the user roles).
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import pg from 'pg';
import Cursor from 'pg-cursor';
import { guardPool } from '../../db/pool.ts';
import { createDatabase, databaseNameOf, dropDatabase, withDatabaseName } from '../../db/databases.ts';
import { checkReadOnlySql, SqlRefused } from './sql-guard.ts';

export interface UserDataSettings {
  /** The platform's database (DATABASE_URL): the data database is derived from it and created through it. */
  platformUrl: string;
  /** USER_DATA_DATABASE_URL, when set. */
  dataUrl?: string | undefined;
  /** SQL_STATEMENT_TIMEOUT, in milliseconds. */
  statementTimeoutMs: number;
  /** SQL_MAX_ROWS: rows a query answers at most (the answer then says `truncated`). */
  maxRows: number;
}

/** The data database's URL: USER_DATA_DATABASE_URL, or the platform's with `_data` after its database name. */
export function userDataDatabaseUrl(platformUrl: string, configured?: string): string {
  if (configured) return configured;
  return withDatabaseName(platformUrl, `${databaseNameOf(platformUrl)}_data`);
}

const hash = (text: string) => createHash('sha256').update(text).digest('hex');

/** Every user role of one data database starts with this (the tests drop a test database's roles by it). */
export function userRolePrefix(dataDatabaseName: string): string {
  return `tessera_data_${hash(dataDatabaseName).slice(0, 8)}_`;
}

/** Where the user's tables live and whom their queries run as. */
export interface UserDataIdentity {
  userId: string;
  schema: string;
  role: string;
}

/** A query's answer: columns with PostgreSQL's type names, rows as arrays in column order. */
export interface SqlAnswer {
  columns: Array<{ name: string; type: string }>;
  rows: unknown[][];
  row_count: number;
  /** True when the query had more rows than `row_count` (the row limit): the rest were not read. */
  truncated: boolean;
  elapsed_ms: number;
}

/** One of the user's tables, as `GET /sql/tables` lists it. */
export interface UserTable {
  name: string;
  columns: Array<{ name: string; type: string }>;
  row_count: number;
  /** The import that made it (table-import.ts records it on the table), when it came from one. */
  import_id: string | null;
  file_id: string | null;
}

/** A query the database refused or stopped (its own message); the API answers 400. */
export class SqlQueryFailed extends Error {
  readonly kind: 'timeout' | 'permission denied' | 'read-only' | 'error';

  constructor(kind: SqlQueryFailed['kind'], message: string) {
    super(message);
    this.kind = kind;
  }
}

/** What the platform records on a table it imported (`COMMENT ON TABLE`), read back by `tables()`. */
export interface TableComment {
  import_id: string;
  file_id: string;
  rows: number;
}

// Values as JSON can carry them: 64-bit integers and numerics as numbers when that is exact (else their text), dates
// and times as PostgreSQL writes them (the session's TimeZone is UTC), never as a JavaScript Date in the process's zone.
const textTypes = new Set([1082, 1083, 1114, 1184, 1186, 1266]);
const int8 = 20;
const numeric = 1700;
const jsonTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (textTypes.has(oid)) return (value: string) => value;
    if (oid === int8) return (value: string) => (Number.isSafeInteger(Number(value)) ? Number(value) : value);
    if (oid === numeric) return (value: string) => (exactNumber(value) ? Number(value) : value);
    return pg.types.getTypeParser(oid, format ?? 'text');
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/** Whether a numeric's text survives the round trip through a double (`12.50` does: 12.5; 0.1 + 40 digits does not). */
function exactNumber(text: string): boolean {
  const parsed = Number(text);
  if (!Number.isFinite(parsed)) return false;
  const normalise = (value: string) => value.replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, '');
  return normalise(String(parsed)) === normalise(text.replace(/^(-?)0+(?=\d)/, '$1'));
}

/** A SCRAM-SHA-256 verifier of `password` (RFC 5802), so `ALTER ROLE … PASSWORD` never sends the password itself. */
function scramVerifier(password: string): string {
  const salt = randomBytes(16);
  const iterations = 4096;
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest('base64');
  const serverKey = createHmac('sha256', salted).update('Server Key').digest('base64');
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey}:${serverKey}`;
}

/**
 * pg-cursor knows nothing of COPY: a COPY reaching the server would make node-postgres call a handler the cursor lacks
 * and throw outside any promise. The parser never lets one through; should one be sent anyway (the tests run the
 * second line alone), the copy is refused and its rows dropped, and the query ends as an error.
 */
class ReadCursor<Row> extends Cursor<Row> {
  copyRefused = false;

  handleCopyInResponse(connection: { sendCopyFail(message: string): void }): void {
    this.copyRefused = true;
    connection.sendCopyFail('COPY is not allowed here');
  }

  handleCopyData(): void {
    this.copyRefused = true;
  }
}

const pgCode = (error: unknown) =>
  typeof error === 'object' && error !== null && 'code' in error ? String((error as { code: unknown }).code) : '';

/** Pools kept for the users whose queries ran last; an older one is closed when a new user needs one. */
const maxUserPools = 64;

export class UserDataDatabase {
  readonly url: string;
  readonly databaseName: string;
  readonly settings: UserDataSettings;
  /** The platform's role on the data database: creates the database's schemas, roles and tables. */
  readonly admin: pg.Pool;
  private ready: Promise<void> | null = null;
  private readonly users = new Map<string, Promise<UserDataIdentity>>();
  private readonly pools = new Map<string, pg.Pool>();
  private readonly rolePrefix: string;

  constructor(settings: UserDataSettings) {
    this.settings = settings;
    this.url = userDataDatabaseUrl(settings.platformUrl, settings.dataUrl);
    this.databaseName = databaseNameOf(this.url);
    this.rolePrefix = userRolePrefix(this.databaseName);
    this.admin = guardPool(
      new pg.Pool({ connectionString: this.url, max: 4, connectionTimeoutMillis: 10_000, idleTimeoutMillis: 30_000 }),
    );
  }

  identity(userId: string): Omit<UserDataIdentity, 'userId'> & { userId: string } {
    const userHash = hash(userId).slice(0, 16);
    return { userId, schema: `userdata_${userHash}`, role: `${this.rolePrefix}${userHash}` };
  }

  /** Creates the database when missing and hardens it (once per database; see the file comment). */
  ensureDatabase(): Promise<void> {
    this.ready ??= this.prepareDatabase().catch((error: unknown) => {
      this.ready = null;
      throw error;
    });
    return this.ready;
  }

  private async prepareDatabase(): Promise<void> {
    try {
      await this.admin.query('select 1');
    } catch (error) {
      // 3D000 invalid_catalog_name: the server is there, the database is not yet.
      if (pgCode(error) !== '3D000') throw error;
      const creator =
        this.settings.dataUrl === undefined
          ? this.settings.platformUrl
          : withDatabaseName(this.url, this.databaseName === 'postgres' ? 'template1' : 'postgres');
      await createDatabase(creator, this.databaseName);
    }
    const client = await this.admin.connect();
    try {
      await client.query('begin');
      // Processes starting together: one hardens, the others wait and find it done.
      await client.query('select pg_advisory_xact_lock(hashtext($1))', ['tessera user data hardening']);
      const done = await client.query(`select 1 from pg_namespace where nspname = 'tessera_import'`);
      if (!done.rowCount) {
        const database = client.escapeIdentifier(this.databaseName);
        await client.query(`revoke all on database ${database} from public`);
        await client.query('revoke all on schema public from public');
        const superuser = await client.query<{ rolsuper: boolean }>(
          'select rolsuper from pg_roles where rolname = current_user',
        );
        if (superuser.rows[0]?.rolsuper) {
          await client.query('revoke select on all tables in schema pg_catalog from public');
          await client.query('revoke select on all tables in schema information_schema from public');
          await client.query('revoke usage on schema information_schema from public');
          // Large objects are the one thing PUBLIC may create outside any schema (even in a read-only transaction).
          await client.query(`do $$
            declare signature text;
            begin
              for signature in select p.oid::regprocedure::text from pg_proc p
                where p.pronamespace = 'pg_catalog'::regnamespace
                  and p.proname in ('lo_create', 'lo_creat', 'lo_from_bytea', 'lo_put', 'lowrite', 'lo_unlink')
              loop
                execute format('revoke execute on function %s from public', signature);
              end loop;
            end $$`);
        }
        // Where imports load before they are moved into the user's schema: no user role can see into it.
        await client.query('create schema tessera_import');
      }
      await client.query('commit');
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** The user's role and schema, created (or their password and grants written again) once per process. */
  ensureUser(userId: string): Promise<UserDataIdentity> {
    let pending = this.users.get(userId);
    if (!pending) {
      pending = this.prepareUser(userId).catch((error: unknown) => {
        this.users.delete(userId);
        throw error;
      });
      this.users.set(userId, pending);
    }
    return pending;
  }

  private async prepareUser(userId: string): Promise<UserDataIdentity> {
    await this.ensureDatabase();
    const identity = this.identity(userId);
    const client = await this.admin.connect();
    try {
      const role = client.escapeIdentifier(identity.role);
      const schema = client.escapeIdentifier(identity.schema);
      const password = this.rolePassword(identity.role);
      const secret = password === null ? 'password null' : `password ${client.escapeLiteral(scramVerifier(password))}`;
      const attributes = `login noinherit nosuperuser nocreatedb nocreaterole noreplication nobypassrls ${secret}`;
      try {
        await client.query(`create role ${role} ${attributes}`);
      } catch (error) {
        // 42710 duplicate_object, 23505 unique_violation (two processes at once): the role is there; set it again.
        if (pgCode(error) !== '42710' && pgCode(error) !== '23505') throw error;
        await client.query(`alter role ${role} ${attributes}`);
      }
      for (let attempt = 1; ; attempt++) {
        try {
          await client.query(`create schema if not exists ${schema}`);
          break;
        } catch (error) {
          if (pgCode(error) !== '23505' || attempt > 3) throw error;
        }
      }
      await client.query(`grant connect on database ${client.escapeIdentifier(this.databaseName)} to ${role}`);
      await client.query(`grant usage on schema ${schema} to ${role}`);
      return identity;
    } finally {
      client.release();
    }
  }

  /** The user role's password: derived from the platform's (see the file comment), or none without one. */
  private rolePassword(role: string): string | null {
    const platformPassword = decodeURIComponent(new URL(this.url).password);
    if (!platformPassword) return null;
    return createHmac('sha256', platformPassword).update(`tessera user data role ${role}`).digest('base64url');
  }

  /** A small pool logged in as the user's role; the least recently used one is closed past `maxUserPools`. */
  private poolFor(identity: UserDataIdentity): pg.Pool {
    let pool = this.pools.get(identity.role);
    if (pool) {
      this.pools.delete(identity.role);
      this.pools.set(identity.role, pool);
      return pool;
    }
    const url = new URL(this.url);
    url.username = encodeURIComponent(identity.role);
    url.password = encodeURIComponent(this.rolePassword(identity.role) ?? '');
    pool = guardPool(
      new pg.Pool({
        connectionString: url.toString(),
        max: 2,
        connectionTimeoutMillis: 10_000,
        idleTimeoutMillis: 10_000,
        types: jsonTypes,
      }),
    );
    this.pools.set(identity.role, pool);
    if (this.pools.size > maxUserPools) {
      const [oldest, oldPool] = this.pools.entries().next().value!;
      this.pools.delete(oldest);
      void oldPool.end().catch(() => undefined);
    }
    return pool;
  }

  /**
   * Runs one read on the user's tables: checked by the parser first (sql-guard.ts), then run as the user's role in a
   * read-only transaction that is rolled back. `parser: false` skips the first line; only the tests do that, to show
   * the second holds on its own. Throws `SqlRefused` or `SqlQueryFailed`.
   */
  async query(
    userId: string,
    sql: string,
    params: unknown[] = [],
    options: { maxRows?: number; parser?: boolean } = {},
  ): Promise<SqlAnswer> {
    if (options.parser !== false) await checkReadOnlySql(sql);
    const maxRows = Math.min(options.maxRows ?? this.settings.maxRows, this.settings.maxRows);
    const identity = await this.ensureUser(userId);
    const client = await this.poolFor(identity).connect();
    const started = performance.now();
    let broken = false;
    // A connection that dies under the query (a server restart) is reported by the query's own error; the client's
    // error event is then only a duplicate, and unheard it would be thrown outside any promise.
    const onError = () => (broken = true);
    client.on('error', onError);
    try {
      await client.query(
        `begin transaction read only; ` +
          `set local statement_timeout = ${Math.max(1, Math.round(this.settings.statementTimeoutMs))}; ` +
          `set local search_path = ${client.escapeIdentifier(identity.schema)}; ` +
          `set local timezone = 'UTC'`,
      );
      const cursor = client.query(new ReadCursor(sql, params, { rowMode: 'array', types: jsonTypes }));
      const { rows, fields } = await new Promise<{ rows: unknown[][]; fields: pg.FieldDef[] }>((resolve, reject) => {
        cursor.read(maxRows + 1, (error, rows, result) => {
          if (error) reject(error);
          else resolve({ rows: rows as unknown[][], fields: result?.fields ?? [] });
        });
      });
      await cursor.close();
      if (cursor.copyRefused) throw new SqlRefused('copy', 'Refused: copy; only one read is allowed');
      const truncated = rows.length > maxRows;
      if (truncated) rows.length = maxRows;
      const types = await client.query<{ type: string }>(
        'select format_type(t.oid, t.modifier) as type from unnest($1::oid[], $2::int[]) with ordinality as t(oid, modifier, position) order by position',
        [fields.map((field) => field.dataTypeID), fields.map((field) => field.dataTypeModifier)],
      );
      return {
        columns: fields.map((field, index) => ({ name: field.name, type: types.rows[index]?.type ?? 'unknown' })),
        rows,
        row_count: rows.length,
        truncated,
        elapsed_ms: Math.round(performance.now() - started),
      };
    } catch (error) {
      throw explainFailure(error, this.settings.statementTimeoutMs);
    } finally {
      await client.query('rollback').catch(() => (broken = true));
      client.off('error', onError);
      client.release(broken);
    }
  }

  /** The user's tables with their columns and row counts (the platform's role reads the catalog). */
  async tables(userId: string): Promise<UserTable[]> {
    await this.ensureDatabase();
    const { schema } = this.identity(userId);
    const result = await this.admin.query<{
      name: string;
      comment: string | null;
      estimate: number;
      columns: Array<{ name: string; type: string }>;
    }>(
      `select c.relname as name, obj_description(c.oid, 'pg_class') as comment, c.reltuples::float8 as estimate,
              json_agg(json_build_object('name', a.attname, 'type', format_type(a.atttypid, a.atttypmod))
                       order by a.attnum) as columns
         from pg_class c
         join pg_namespace n on n.oid = c.relnamespace
         join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
        where n.nspname = $1 and c.relkind in ('r', 'p', 'v', 'm')
        group by c.oid
        order by c.relname`,
      [schema],
    );
    return result.rows.map((row) => {
      const comment = parseComment(row.comment);
      return {
        name: row.name,
        columns: row.columns,
        row_count: comment?.rows ?? Math.max(0, Math.round(row.estimate)),
        import_id: comment?.import_id ?? null,
        file_id: comment?.file_id ?? null,
      };
    });
  }

  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all([this.admin, ...pools].map((pool) => pool.end().catch(() => undefined)));
  }
}

export function parseComment(comment: string | null): TableComment | null {
  if (!comment) return null;
  try {
    const parsed = JSON.parse(comment) as Partial<TableComment>;
    return typeof parsed.import_id === 'string' ? (parsed as TableComment) : null;
  } catch {
    return null;
  }
}

/** The database's refusal in words a caller can act on. */
function explainFailure(error: unknown, timeoutMs: number): Error {
  if (error instanceof SqlRefused) return error;
  const code = pgCode(error);
  const message = error instanceof Error ? error.message : String(error);
  if (!/^[0-9A-Z]{5}$/.test(code)) return error instanceof Error ? error : new Error(message);
  if (code === '57014') {
    return new SqlQueryFailed(
      'timeout',
      `The query ran longer than the statement timeout (SQL_STATEMENT_TIMEOUT, ${timeoutMs} ms) and was cancelled`,
    );
  }
  if (code === '42501') return new SqlQueryFailed('permission denied', `Refused by the database: ${message}`);
  if (code === '25006') return new SqlQueryFailed('read-only', `Refused by the database: ${message}`);
  return new SqlQueryFailed('error', `The query failed: ${message}`);
}

/**
 * Drops a data database and its user roles (the tests' databases: a role is cluster-wide and outlives its database).
 * `platformUrl` names the platform database the data database was derived from.
 */
export async function dropUserDataDatabase(platformUrl: string, dataUrl?: string): Promise<void> {
  const url = userDataDatabaseUrl(platformUrl, dataUrl);
  const name = databaseNameOf(url);
  await dropDatabase(withDatabaseName(url, 'postgres'), name);
  const client = new pg.Client({ connectionString: withDatabaseName(url, 'postgres') });
  await client.connect();
  try {
    const roles = await client.query<{ rolname: string }>(
      `select rolname from pg_roles where starts_with(rolname, $1)`,
      [userRolePrefix(name)],
    );
    for (const { rolname } of roles.rows) await client.query(`drop role if exists ${client.escapeIdentifier(rolname)}`);
  } finally {
    await client.end();
  }
}
