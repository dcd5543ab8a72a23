/**
 * The one-off work `npm start` does before it starts the platform's processes, done in a child process of its own:
 * the app database's migrations, the workflow bundle every process starts from, and the banner's lines on media and
 * embeddings. The supervisor lives as long as the platform; had it done this work itself, it would keep what the work
 * loaded (webpack, MikroORM's migrator, the worker and the media engines' modules) for good: 335 MiB resident against
 * about 100 without it (issue 29; docs/benchmarks.md, "Memory"). The child reports over its IPC channel and exits.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

type Environment = Record<string, string | undefined>;

export interface Prepared {
  /** The migrations applied now (empty when the schema was up to date). */
  applied: string[];
  /** WORKFLOW_BUNDLE_PATH for the platform's processes: the environment's own, else the bundle built here. */
  bundlePath?: string;
  /** The banner's media line (activities/media/local mediaAvailability). */
  media: string;
  /** The default embedding model's id, and whether the local engine serves it; null when EMBEDDING_MODEL names none. */
  embedding: { id: string; local: boolean } | null;
}

/** Runs this file in a child process with `environment`; resolves with what it reports, rejects when it fails. */
export function prepareInChild(environment: Environment, dataDir: string): Promise<Prepared> {
  const child = fork(fileURLToPath(import.meta.url), [dataDir], {
    env: environment as NodeJS.ProcessEnv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    let prepared: Prepared | undefined;
    child.on('message', (message: Prepared) => (prepared = message));
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0 && prepared) resolve(prepared);
      else
        reject(new Error(`preparing the local state failed (${signal ?? `exit code ${code}`}); see the lines above`));
    });
  });
}

async function prepare(dataDir: string): Promise<Prepared> {
  const environment: Environment = process.env;
  const log = (line: string) => process.stdout.write(`[start] ${line}\n`);
  const [{ migrate, openOrm }, { sharedWorkflowBundle }] = await Promise.all([
    import('../../db/orm.ts'),
    import('./local-state.ts'),
  ]);
  const orm = await openOrm(environment.DATABASE_URL!, { poolMax: 1 });
  let applied: string[];
  try {
    applied = await migrate(orm);
  } finally {
    await orm.close();
  }
  log(applied.length ? `applied migrations: ${applied.join(', ')}` : 'database schema is up to date');
  await sharedWorkflowBundle(environment, dataDir, log);

  const [{ readSettings }, { loadCatalogue }, { defaultEmbeddingModel }, local, hosted, { localEngineProviderId }] =
    await Promise.all([
      import('../../config/settings.ts'),
      import('../../config/load-catalogue.ts'),
      import('../../activities/routing/router.ts'),
      import('../../activities/media/local/index.ts'),
      import('../../activities/media/providers/index.ts'),
      import('../../common/catalogue.ts'),
    ]);
  const engines = local.createMediaEngines(hosted.createHostedMediaEngines(readSettings(environment), environment));
  const model = defaultEmbeddingModel(loadCatalogue(environment).catalogue, environment.EMBEDDING_MODEL);
  return {
    applied,
    ...(environment.WORKFLOW_BUNDLE_PATH ? { bundlePath: environment.WORKFLOW_BUNDLE_PATH } : {}),
    media: local.mediaAvailability(engines),
    embedding: model ? { id: model.id, local: model.servedBy[0]?.provider === localEngineProviderId } : null,
  };
}

if (import.meta.main) {
  const prepared = await prepare(process.argv[2]!);
  process.send!(prepared, () => process.exit(0));
}
