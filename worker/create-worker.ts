/**
 * Builds the worker's dependencies and the Temporal worker itself; used by the background worker process
 * and by the API process, whose in-process worker takes eagerly started completions.
 */
import type { NativeConnection } from '@temporalio/worker';
import {
  DefaultLogger,
  Runtime,
  Worker,
  bundleWorkflowCode,
  type LogLevel,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
// Internal to the SDK (pinned in package.json): the handle on the stack-trace promise hook, see SandboxedWorker.
import { globalHandlers } from '@temporalio/worker/lib/workflow/vm-shared.js';
import type { MikroORM } from '@mikro-orm/postgresql';
import { createActivities } from '../activities/index.ts';
import { AccountPlans } from '../activities/credits/accounts.ts';
import { CreditLedger } from '../activities/credits/credit-ledger.ts';
import type { PlansFile } from '../common/plans.ts';
import { ProviderCalls, type ProviderCallDependencies } from '../activities/provider-calls.ts';
import { CircuitBreaker } from '../activities/routing/circuit-breaker.ts';
import { StreamHub } from '../activities/streaming/stream-hub.ts';
import { TurnStops } from '../activities/streaming/turn-stops.ts';
import { ResponseStore } from '../activities/responses/response-store.ts';
import { PgListener } from '../db/listener.ts';
import { StreamJournal } from '../activities/streaming/stream-journal.ts';
import { ProviderHeadroom } from '../activities/routing/provider-headroom.ts';
import type { LoadedCatalogue } from '../config/load-catalogue.ts';
import { googleWorkspaceConfigured, messengerSettingsOf, toolSettingsOf, type Settings } from '../config/settings.ts';
import { messengerClients } from '../activities/messengers/messenger-activities.ts';
import type { MessengerClient } from '../activities/messengers/messenger.ts';
import type { MessengerPlatform, MessengerSettings } from '../common/messengers.ts';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import type { AgentRoutingSlot } from '../activities/chat-activities.ts';
import { ConversationStore } from '../activities/conversations/conversation-store.ts';
import { createTurnCloser } from '../activities/conversations/turn-closer.ts';
import type { ToolServices } from '../activities/tools/tool.ts';
import type { ToolSettings } from '../config/tool-settings.ts';
import { MemoryStore } from '../activities/memory/memory-store.ts';
import { SiteStore, SiteUrls } from '../activities/sites/site-store.ts';
import { createMailer } from '../activities/mail/mailer.ts';
import { openPool, type Pool } from '../db/pool.ts';
import type { MediaServices } from '../activities/media/media-activities.ts';
import { createHostedMediaEngines } from '../activities/media/providers/index.ts';
import { createMediaEngines } from '../activities/media/local/index.ts';
import { createMediaFiles } from '../activities/media/storage.ts';
import { UploadStore } from '../activities/uploads/upload-store.ts';
import { localEmbeddingModelId, ragModelOf, type RagModel } from '../activities/rag/rag-model.ts';
import { RagStore } from '../activities/rag/rag-store.ts';
import { createFileServices } from '../activities/rag/file-services.ts';
import { defaultEmbeddingModel } from '../activities/routing/router.ts';
import { warmToolEngines } from '../activities/tools/index.ts';
import { UserDataDatabase } from '../activities/user-data/data-database.ts';
import { createLogger } from '../process/logger.ts';
import { EmbeddingCalls, EmbeddingHandover } from '../activities/embeddings/embedding-calls.ts';
import { createEmbeddingService } from '../activities/embeddings/embedding-service.ts';
import { LocalEmbeddingEngine } from '../activities/embeddings/local-engine.ts';
import { webhookEncryptionKey, WebhookStore } from '../activities/webhooks/webhook-store.ts';
import { githubCommentService } from '../activities/webhooks/github.ts';
import { GoogleAccounts } from '../activities/google/google-accounts.ts';
import { GoogleApi } from '../activities/google/google-api.ts';
import { GoogleOAuthClient } from '../activities/google/oauth-client.ts';
import { TokenCipher } from '../activities/google/token-cipher.ts';
import { WorkspaceWrites } from '../activities/google/workspace-writes.ts';
import { processTracing, type Tracing } from '../process/tracing.ts';
import { ApiFileStore } from '../activities/files/api-files.ts';
import { BatchStore } from '../activities/batches/batch-store.ts';
import { CapacityQueue } from '../activities/capacity/capacity-queue.ts';
import { Router } from '../activities/routing/router.ts';

const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));
/** The bundles built in this process: the plain one, and the one with the tracing interceptors (process/tracing.ts). */
const bundles = new Map<'plain' | 'traced', Promise<WorkflowBundleWithSourceMap>>();
let runtimeInstalled = false;

/** Installs the Temporal runtime once per process, logging at TEMPORAL_LOG_LEVEL (default WARN). */
export function installTemporalRuntime(level = (process.env.TEMPORAL_LOG_LEVEL ?? 'WARN') as LogLevel): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    // No SDK signal handlers: the process drains in its own order (HTTP first, then the worker).
    Runtime.install({ logger: new DefaultLogger(level), shutdownSignals: [] });
  } catch {
    // Already installed by someone else in this process (e.g. a test harness): keep theirs.
  }
}

/** A bundle as `buildWorkflowBundleFile` writes it; `traced` when it holds the tracing interceptors. */
type BundleFile = WorkflowBundleWithSourceMap & { traced?: boolean };

/**
 * The workflow bundle, built once per process (webpack through the SDK's bundler), or read from
 * `WORKFLOW_BUNDLE_PATH` when that names a bundle built ahead: a JSON file of what `buildWorkflowBundleFile` writes
 * (`{code, sourceMap}`). Bundling costs a process 5-10 s of CPU on two cores; `npm test` builds the bundle once for
 * the whole run (test/helpers/global-setup.ts) instead of once per test file, and a production image may build it at
 * image build time. A bundle read from a file is used as it is: it must come from the same workflow code.
 *
 * With `interceptorModules` (traces on: process/tracing.ts) the bundle also holds those workflow interceptors: they
 * are bundled in, never passed to the worker (which ignores `interceptors.workflowModules` beside a built bundle), and
 * only then, since every module in the bundle is evaluated for each workflow run. A prebuilt file is used for a traced
 * worker only when it was built traced, else the traced bundle is built here.
 */
export function workflowBundle(interceptorModules: string[] = []): Promise<WorkflowBundleWithSourceMap> {
  const traced = interceptorModules.length > 0;
  const key = traced ? 'traced' : 'plain';
  let bundle = bundles.get(key);
  if (!bundle) {
    const prebuilt = process.env.WORKFLOW_BUNDLE_PATH?.trim();
    bundle = (
      prebuilt ? readFile(prebuilt, 'utf8').then((text) => JSON.parse(text) as BundleFile) : Promise.resolve(null)
    ).then((file) =>
      file && !!file.traced === traced
        ? { code: file.code, sourceMap: file.sourceMap }
        : bundleWorkflowCode({
            workflowsPath,
            workflowInterceptorModules: interceptorModules,
            logger: quietBundlerLogger,
          }),
    );
    bundles.set(key, bundle);
  }
  return bundle;
}

/** Bundles the workflow code and writes it to `path`, for `WORKFLOW_BUNDLE_PATH` (`interceptorModules`: see above). */
export async function buildWorkflowBundleFile(path: string, interceptorModules: string[] = []): Promise<void> {
  const built = await bundleWorkflowCode({
    workflowsPath,
    workflowInterceptorModules: interceptorModules,
    logger: quietBundlerLogger,
  });
  await mkdir(dirname(path), { recursive: true });
  const file: BundleFile = { code: built.code, sourceMap: built.sourceMap };
  if (interceptorModules.length > 0) file.traced = true;
  await writeFile(path, JSON.stringify(file));
}

/** The SDK bundler's logger without its progress lines (warnings and errors only). */
export const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};

/**
 * The SDK's worker, running workflow code the cheaper way the SDK also offers, measured per completion on npm start:
 *
 * - Without a per-call watchdog. The SDK passes its deadlock timeout (`isolateExecutionTimeout`) to every `vm` call
 *   into the workflow sandbox, and Node implements a `vm` timeout by starting a watchdog thread with its own event
 *   loop for that one call, several times per workflow task: 1.2 ms of CPU and 2 ms of latency. Tessera's workflows
 *   are short and bounded, awaiting activities rather than computing; a workflow bug that loops forever would hang
 *   its thread instead of failing the task.
 * - In this thread, with the SDK's reusable V8 context (its `debugMode` creator), and without the promise hook that
 *   records a source-mapped stack trace for every promise a workflow creates, kept only to answer the Web UI's
 *   "stack trace" query of a running workflow: 0.9 ms of CPU. `TEMPORAL_WORKFLOW_STACK_TRACES=true` brings it back
 *   (with the SDK's workflow thread, as it runs by default).
 *
 * Sandbox, isolation, determinism checks and replay are the SDK's own either way.
 */
export class SandboxedWorker extends Worker {
  static stackTraces = false;

  protected static override async createWorkflowCreator(
    ...[bundle, options, logger]: Parameters<(typeof Worker)['createWorkflowCreator']>
  ): ReturnType<(typeof Worker)['createWorkflowCreator']> {
    // An undefined timeout is how `vm` is told to run without a watchdog.
    const unwatched = { ...options, isolateExecutionTimeoutMs: undefined as never };
    if (this.stackTraces) return super.createWorkflowCreator(bundle, unwatched, logger);
    const creator = await super.createWorkflowCreator(bundle, { ...unwatched, debugMode: true }, logger);
    // The in-thread creator installs the hook process-wide; workflows created from now on report no stack traces.
    // (`stopPromiseHook` rather than the public `uninstall()`, which would also drop the source-mapped stack traces
    // of workflow failures recorded in history.)
    (globalHandlers as unknown as { stopPromiseHook(): void }).stopPromiseHook();
    globalHandlers.promiseHookInstalled = false;
    return creator;
  }
}

export interface WorkerDependencies {
  /** The hot-path pool (credit saga, and in the API authentication and admission); closed by the process. */
  pool: Pool;
  conversations: ConversationStore;
  toolSettings: ToolSettings;
  /** The messaging apps configured here, and their clients (answers are sent by the worker, links made by the API). */
  messengerSettings: MessengerSettings;
  messengers: Partial<Record<MessengerPlatform, MessengerClient>>;
  hub: StreamHub;
  /** The process's LISTEN connection (db/listener.ts): started and closed by the process. */
  listener: PgListener;
  /** Stop, for a turn's step running in this process (activities/streaming/turn-stops.ts). */
  stops: TurnStops;
  journal: StreamJournal;
  breaker: CircuitBreaker;
  calls: ProviderCalls;
  /** Embedding attempts (activities/embeddings/), and the callers in this process waiting for their vectors. */
  embeddingCalls: EmbeddingCalls;
  embeddingHandover: EmbeddingHandover;
  ledger: CreditLedger;
  accounts: AccountPlans;
  plans: PlansFile;
  /** The agent service's memories (loaded into agent turns, saved by the save_memory tool). */
  memories: MemoryStore;
  /** Published sites (the deploy endpoints, the site host and the publish_site tool). */
  sites: SiteStore;
  /** What tools with outside effects use. */
  toolServices: ToolServices;
  /** Media engines (hosted ones with keys, then local ones), result files and the engines' breaker. */
  media: MediaServices;
  /** How old a credit hold must be before the sweep of abandoned holds asks about its workflow (CREDIT_HOLD_GRACE). */
  creditHoldGraceMs: number;
  /** The users' data database: their imported tables, read-only queries (closed by the process). */
  userData: UserDataDatabase;
  /** Users' uploaded files (PDF, xlsx, CSV, images), in the media store beside the media files. */
  uploads: UploadStore;
  /** The RAG index's tables, and the embedding model new indexes use (activities/rag/). */
  rag: RagStore;
  ragModel: RagModel;
  /** Inbound webhooks' configuration (secrets, GitHub tokens); null without TOKEN_ENCRYPTION_KEY. */
  webhooks: WebhookStore | null;
  /** Users' Google accounts (the login stores them, the workspace tools use their tokens); null unless configured. */
  google: GoogleAccounts | null;
  /** The Files API's files (batch inputs, and batches' output and error files) and the batches (activities/batches/). */
  apiFiles: ApiFileStore;
  batches: BatchStore;
  /** The durable capacity queue: background jobs waiting for a slot (activities/capacity/). */
  capacity: CapacityQueue;
  /** Filled by the agent service where this process serves it: the routing step of its turns (chat-activities.ts). */
  agentRouting?: AgentRoutingSlot;
}

export function createWorkerDependencies(
  orm: MikroORM,
  settings: Settings,
  catalogue: LoadedCatalogue,
  plans: PlansFile,
  observe?: ProviderCallDependencies['observe'],
  /** Where OPENAI_API_KEY and OPENAI_BASE_URL are read for the OpenAI media engine (as the catalogue reads them). */
  environment: Record<string, string | undefined> = process.env,
): WorkerDependencies {
  const messengerSettings = messengerSettingsOf(settings);
  const pool = openPool(settings.DATABASE_URL);
  const hub = new StreamHub();
  // The process's one LISTEN connection (started by the process: api/server.ts, worker/main.ts) and the turn stops
  // that hear on it.
  const listener = new PgListener(settings.DATABASE_URL, createLogger('listener'));
  const stops = new TurnStops(pool);
  const ledger = new CreditLedger(orm, pool);
  const accounts = new AccountPlans(orm, ledger, plans);
  const journal = new StreamJournal(orm, { pool });
  const breaker = new CircuitBreaker(orm, {
    failureThreshold: settings.BREAKER_FAILURE_THRESHOLD,
    cooldownMs: settings.BREAKER_COOLDOWN_MS,
    probeTimeoutMs: settings.BREAKER_PROBE_TIMEOUT_MS,
    snapshotTtlMs: settings.BREAKER_SNAPSHOT_TTL_MS,
  });
  const conversations = new ConversationStore(pool);
  const calls = new ProviderCalls({
    catalogue,
    breaker,
    hub,
    journal,
    // A chat turn's last model call closes the turn in its own transaction (activities/conversations/turn-closer.ts).
    turnCloser: createTurnCloser({ conversations, journal, hub }),
    // A Response's end is written in the transaction of its call's settlement (activities/responses/).
    responses: new ResponseStore(pool),
    providerTimeouts: {
      connectTimeoutMs: settings.PROVIDER_CONNECT_TIMEOUT_MS,
      idleTimeoutMs: settings.PROVIDER_IDLE_TIMEOUT_MS,
      requestTimeoutMs: settings.PROVIDER_REQUEST_TIMEOUT_MS,
    },
    ledger,
    stops,
    // What each provider's stated limits leave, for a batch's lines (activities/routing/provider-headroom.ts).
    headroom: new ProviderHeadroom(),
    observe,
    tracing: processTracing(),
  });
  const embeddingHandover = new EmbeddingHandover();
  const embeddingCalls = new EmbeddingCalls({
    catalogue,
    breaker,
    ledger,
    journal,
    handover: embeddingHandover,
    localEngine: new LocalEmbeddingEngine(),
    providerTimeouts: {
      connectTimeoutMs: settings.PROVIDER_CONNECT_TIMEOUT_MS,
      requestTimeoutMs: settings.PROVIDER_REQUEST_TIMEOUT_MS,
    },
    observe,
  });
  const memories = new MemoryStore(pool);
  // Outgoing mail (send_email) only where an SMTP server is configured: the tool is not offered otherwise.
  const mail = settings.SMTP_URL
    ? createMailer({ pool, smtpUrl: settings.SMTP_URL, from: settings.MAIL_FROM, log: (line) => console.log(line) })
    : undefined;
  const sites = new SiteStore({
    pool,
    urls: new SiteUrls({
      domain: settings.SITE_DOMAIN,
      template: settings.SITE_PUBLIC_URL_TEMPLATE,
      publicUrl: settings.AGENT_PUBLIC_URL,
      port: settings.AGENT_PORT,
    }),
    maxBytes: settings.SITE_MAX_BYTES,
  });
  const media: MediaServices = {
    ...createMediaEngines(createHostedMediaEngines(settings, environment)),
    files: createMediaFiles(settings),
    breaker,
    pollIntervalMs: settings.MEDIA_POLL_INTERVAL_MS,
    callbackMaxAttempts: settings.MEDIA_CALLBACK_MAX_ATTEMPTS,
  };
  const uploads = new UploadStore({
    pool,
    store: media.files.store,
    maxFileBytes: settings.UPLOAD_MAX_BYTES,
    quotaBytes: settings.UPLOAD_QUOTA_BYTES,
  });
  // Users' tables live in a database of their own, reached through roles of their own (activities/user-data/).
  const userData = new UserDataDatabase({
    platformUrl: settings.DATABASE_URL,
    dataUrl: settings.USER_DATA_DATABASE_URL,
    statementTimeoutMs: settings.SQL_STATEMENT_TIMEOUT,
    maxRows: settings.SQL_MAX_ROWS,
  });
  const toolSettings = toolSettingsOf(settings);
  // Google login and the workspace tools share one token store (activities/google/google-accounts.ts).
  const google = googleWorkspaceConfigured(settings)
    ? new GoogleAccounts({
        pool,
        cipher: new TokenCipher(settings.TOKEN_ENCRYPTION_KEY!),
        oauth: new GoogleOAuthClient({
          clientId: settings.GOOGLE_CLIENT_ID!,
          clientSecret: settings.GOOGLE_CLIENT_SECRET!,
          issuer: settings.GOOGLE_ISSUER,
        }),
      })
    : null;
  const googleApi =
    google && toolSettings.google
      ? new GoogleApi({
          accounts: google,
          writes: new WorkspaceWrites(pool),
          apiBaseUrl: settings.GOOGLE_API_BASE_URL,
          loginUrl: toolSettings.google.loginUrl,
        })
      : undefined;
  // Inbound webhooks' secrets and GitHub tokens, encrypted at rest: unavailable without TOKEN_ENCRYPTION_KEY.
  const webhooks = settings.TOKEN_ENCRYPTION_KEY
    ? new WebhookStore(pool, new TokenCipher(webhookEncryptionKey(settings.TOKEN_ENCRYPTION_KEY)))
    : null;
  const ragModel = ragModelOf(
    catalogue.catalogue,
    settings.RAG_EMBEDDING_MODEL,
    defaultEmbeddingModel(catalogue.catalogue, settings.EMBEDDING_MODEL)?.id ?? localEmbeddingModelId,
  );
  return {
    apiFiles: new ApiFileStore({
      pool,
      store: media.files.store,
      maxBytes: settings.FILES_MAX_BYTES,
      maxLines: settings.FILES_MAX_LINES,
    }),
    batches: new BatchStore(pool),
    capacity: new CapacityQueue(pool, plans),
    media,
    userData,
    uploads,
    rag: new RagStore(pool),
    ragModel,
    creditHoldGraceMs: settings.CREDIT_HOLD_GRACE,
    memories,
    sites,
    toolServices: {
      memories,
      sites,
      sql: userData,
      ...(mail ? { mail } : {}),
      ...(webhooks ? { github: githubCommentService(webhooks, settings.GITHUB_API_BASE_URL) } : {}),
      ...(googleApi ? { google: googleApi } : {}),
    },
    google,
    webhooks,
    agentRouting: {},
    pool,
    listener,
    stops,
    conversations,
    toolSettings,
    messengerSettings,
    messengers: messengerClients(messengerSettings),
    hub,
    journal,
    breaker,
    calls,
    embeddingCalls,
    embeddingHandover,
    ledger,
    accounts,
    plans,
  };
}

export async function createWorker(options: {
  orm: MikroORM;
  connection: NativeConnection;
  settings: Settings;
  catalogue: LoadedCatalogue;
  dependencies: WorkerDependencies;
  /** Traces on (process/tracing.ts): the workflow and activity interceptors and the workflow spans' sink. */
  tracing?: Tracing | null;
}): Promise<Worker> {
  const { settings, tracing } = options;
  // Tools run as local activities in the process that runs the turn: their engines start with its worker.
  const logger = createLogger('worker');
  warmToolEngines(options.dependencies.toolSettings, (tool, error) =>
    logger.warn({ tool, err: error }, 'a tool engine did not start ahead of calls'),
  );
  const temporal = new Client({ connection: options.connection, namespace: settings.TEMPORAL_NAMESPACE });
  SandboxedWorker.stackTraces = settings.TEMPORAL_WORKFLOW_STACK_TRACES;
  // Activities embed through the same path as POST /v1/embeddings: RAG indexing as its workflow, the agents' file
  // search (a step of their turn) with the same steps run in place (EmbeddingService.embedQuery).
  const embeddings = createEmbeddingService({
    client: temporal,
    settings,
    catalogue: options.catalogue,
    dependencies: options.dependencies,
  });
  const { uploads, rag, ragModel } = options.dependencies;
  return SandboxedWorker.create({
    connection: options.connection,
    namespace: settings.TEMPORAL_NAMESPACE,
    taskQueue: settings.TEMPORAL_TASK_QUEUE,
    workflowBundle: await workflowBundle(tracing?.workflowInterceptorModules),
    ...(tracing ? { interceptors: tracing.workerInterceptors, sinks: tracing.sinks } : {}),
    activities: createActivities({
      orm: options.orm,
      ...options.dependencies,
      embeddings,
      router: new Router(options.catalogue, options.dependencies.breaker, options.dependencies.plans),
      toolServices: {
        ...options.dependencies.toolServices,
        files: createFileServices({ uploads, rag, embeddings, ragModel }),
      },
      isRunning: async (workflowId) => {
        try {
          const description = await temporal.workflow.getHandle(workflowId).describe();
          return description.status.name === 'RUNNING';
        } catch (error) {
          if (error instanceof WorkflowNotFoundError) return false;
          throw error;
        }
      },
    }),
    // A completion holds its workflow task slot from its eager start until the server acknowledges the task's
    // completion, which under load trails the answer the client already got. With 200 slots, 64 busy clients and a
    // slow acknowledgement ran the slots out and eager start was declined (the workflow then took the slow path
    // through the task queue): slots are cheap, a declined eager start is not.
    maxConcurrentWorkflowTaskExecutions: 1000,
    maxConcurrentLocalActivityExecutions: 1000,
    maxCachedWorkflows: 2000,
    shutdownGraceTime: `${settings.SHUTDOWN_GRACE_MS}ms`,
  });
}

/** Stops a worker that may already be stopping; resolves when its run() has ended. */
export async function stopWorker(worker: Worker, running: Promise<void>): Promise<void> {
  if (worker.getState() === 'RUNNING') worker.shutdown();
  await running;
}
