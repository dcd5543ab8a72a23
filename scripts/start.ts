/**
 * `npm start`: the whole platform on embedded defaults, in one command.
 * Temporal dev server (reused if one answers; Web UI on :8233; persistent under .data/), PostgreSQL
 * (DATABASE_URL, else an embedded server under .data/), migrations, the provider simulator when no provider
 * key is set, then the API process (gateway and agent service, with its in-process worker) and a background worker
 * process. This process supervises what it started (scripts/lib/supervisor.ts): a part that exits unasked is said in
 * the log and started again with backoff; the API and the worker exit when this process is gone.
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { stopOnSignals } from '../process/signals.ts';
import { version } from '../process/version.ts';
import { loadCatalogue } from '../config/load-catalogue.ts';
import { readSettings } from '../config/settings.ts';
import { dataDirectory } from './lib/data-dir.ts';
import { ensureDatabase } from './lib/database.ts';
import { nodeProgram, supervise } from './lib/supervisor.ts';
import { ensureTemporalServer, type TemporalServerHandle } from './lib/temporal-server.ts';
import type { DatabaseHandle } from './lib/database.ts';
import { generatedSecrets, localDirectories, simulateProviders } from './lib/local-state.ts';
import { prepareInChild } from './lib/prepare.ts';
import type { startSimulator } from '../simulator/server.ts';
import { ensureWebBuild } from './lib/web-build.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
// Local state (dev server store, embedded PostgreSQL, master key, sandboxes); the bench points it elsewhere.
const dataDir = dataDirectory();
mkdirSync(dataDir, { recursive: true });
const log = (line: string) => process.stdout.write(`[start] ${line}\n`);
const environment: Record<string, string | undefined> = { ...process.env };
localDirectories(environment, dataDir);

// The first start of each part is awaited (its failure ends `npm start` with the reason); later ones are the
// supervisor's.
let temporal: TemporalServerHandle | undefined;
const temporalPart = await supervise({
  name: 'the Temporal dev server',
  log,
  start: async () => {
    const handle = await ensureTemporalServer({
      address: environment.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
      namespace: environment.TEMPORAL_NAMESPACE ?? 'default',
      uiPort: Number(environment.TEMPORAL_UI_PORT ?? 8233),
      dbFile: `${dataDir}/temporal.db`,
      log,
    });
    temporal ??= handle;
    return handle.exited ? { exited: handle.exited, stop: handle.stop } : null;
  },
});
environment.TEMPORAL_ADDRESS = temporal!.address;

let database: DatabaseHandle | undefined;
const databasePart = await supervise({
  name: 'the embedded PostgreSQL',
  log,
  start: async () => {
    const handle = await ensureDatabase({ dataDir, log });
    database ??= handle;
    return handle.exited ? { exited: handle.exited, stop: handle.stop } : null;
  },
});
environment.DATABASE_URL = database!.url;

// With no provider key at all, every provider is played by the simulator, and the banner says so.
// (Imported only then: a platform with keys does not carry the simulator's modules.)
let simulator: Awaited<ReturnType<typeof startSimulator>> | null = null;
const anyKey = loadCatalogue(environment).endpoints.size > 0;
if (!anyKey) {
  const simulation = await import('../simulator/server.ts');
  simulator = await simulation.startSimulator({ port: Number(environment.SIMULATOR_PORT ?? 4010) });
  simulateProviders(environment, simulator.url);
}
generatedSecrets(environment, dataDir);

// The web app the agent service serves at / (web/): built when its output is missing or older than its sources.
await ensureWebBuild(log);
// Migrations, the shared workflow bundle and the banner's media and embedding lines, in a child process
// (scripts/lib/prepare.ts): this process outlives the work, and would keep its modules resident.
const prepared = await prepareInChild(environment, dataDir);
if (prepared.bundlePath) environment.WORKFLOW_BUNDLE_PATH = prepared.bundlePath;
// The API process and the worker run with this process's Node flags (bootstrap.sh sets the heap's young generation).
const settings = readSettings(environment);
const host = settings.HOST === '0.0.0.0' ? '127.0.0.1' : settings.HOST;
const gateway = {
  url: settings.API_SERVICES.includes('gateway') ? `http://${host}:${settings.PORT}` : undefined,
  agents: settings.API_SERVICES.includes('agents') ? { url: `http://${host}:${settings.AGENT_PORT}` } : undefined,
};
const apiPart = await supervise({
  name: 'the API process',
  log,
  start: nodeProgram({
    script: `${root}api/server.ts`,
    env: environment,
    readyUrls: [gateway.url, gateway.agents?.url].filter((url) => url !== undefined).map((url) => `${url}/health/live`),
    stopGraceMs: settings.SHUTDOWN_GRACE_MS + 30_000,
  }),
});
const workerPart = await supervise({
  name: 'the background worker',
  log,
  start: nodeProgram({ script: `${root}worker/main.ts`, env: environment }),
});

const providers = loadCatalogue(environment).catalogue.providers.filter((provider) => provider.enabled);
const banner = [
  '',
  `  Tessera ${version} is running`,
  `  Gateway API        ${gateway.url ? `${gateway.url}   (OpenAI SDK base URL: ${gateway.url}/v1)` : 'off (API_SERVICES)'}`,
  `  Agent service      ${gateway.agents?.url ?? 'off (API_SERVICES)'}`,
  `  Login e-mail       ${environment.SMTP_URL ? `SMTP (${new URL(environment.SMTP_URL).host})` : 'no SMTP_URL: magic links are written to this log instead of sent'}`,
  `  Google login       ${googleLine()}`,
  `  Temporal Web UI    http://127.0.0.1:${environment.TEMPORAL_UI_PORT ?? 8233}${temporal!.startedHere ? '' : '   (existing server)'}`,
  `  Temporal server    ${temporal!.address}`,
  `  Database           ${database!.embedded ? `embedded PostgreSQL under ${dataDir}/postgres` : 'DATABASE_URL'}`,
  simulator
    ? `  Providers          SIMULATOR at ${simulator.url}: no provider API key is set, so every provider is simulated`
    : `  Providers          ${providers.map((provider) => provider.id).join(', ')}`,
  `  Embeddings         ${embeddingLine()}`,
  `  Messaging apps     ${messagingAppsLine()}`,
  `  Inbound webhooks   ${webhooksLine()}`,
  `  Media              ${prepared.media}${simulator ? '; hosted engines SIMULATED' : ''}`,
  `  Master key         ${environment.MASTER_KEY}${process.env.MASTER_KEY ? '' : `   (generated, kept in ${dataDir}/master-key)`}`,
  '',
  `  Try: curl -s ${gateway.url}/v1/chat/completions -H "Authorization: Bearer $MASTER_KEY" \\`,
  `         -H 'Content-Type: application/json' -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}'`,
  '',
];
process.stdout.write(banner.join('\n') + '\n');

stopOnSignals(async () => {
  // A terminal's Ctrl-C reaches every part at once: none is started again while the others drain and stop.
  for (const part of [apiPart, workerPart, temporalPart, databasePart]) part.stopRestarting();
  await Promise.all([apiPart.stop(), workerPart.stop()]);
  await simulator?.close();
  await temporalPart.stop();
  await databasePart.stop();
});

/** The banner's line on Google: real, simulated (sign in with any address, from this machine), or off. */
function googleLine(): string {
  if (!environment.GOOGLE_CLIENT_ID) return 'off (set GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET)';
  if (simulator && environment.GOOGLE_ISSUER?.startsWith(simulator.url)) {
    return `SIMULATED at ${environment.GOOGLE_ISSUER}: "Log in with Google" (${gateway.agents?.url ?? ''}/auth/google) takes any address, and the workspace agents use the simulated Gmail, Calendar, Drive, Sheets, Docs, Contacts and Tasks`;
  }
  return `on (${environment.GOOGLE_ISSUER ?? 'https://accounts.google.com'})`;
}

/** The banner's line on embeddings: the default model (RAG's), and whether it runs here. */
function embeddingLine(): string {
  const model = prepared.embedding;
  if (!model) return `none: EMBEDDING_MODEL names no embedding model (${environment.EMBEDDING_MODEL})`;
  return `default ${model.id}${model.local ? ' (local engine, Universal Sentence Encoder Lite: no key needed)' : ''}`;
}

/** The banner's line on LINE, Telegram and Slack: real, simulated (with the simulator's delivery URLs), or off. */
function messagingAppsLine(): string {
  const apps = [
    {
      name: 'LINE',
      base: environment.LINE_API_BASE_URL && `${environment.LINE_API_BASE_URL}/line`,
      on: !!environment.LINE_CHANNEL_ACCESS_TOKEN,
    },
    { name: 'Telegram', base: environment.TELEGRAM_API_BASE_URL, on: !!environment.TELEGRAM_BOT_TOKEN },
    {
      name: 'Slack',
      base: environment.SLACK_API_BASE_URL?.replace(/\/api\/?$/, ''),
      on: !!environment.SLACK_BOT_TOKEN,
    },
  ];
  return apps
    .map((app) => {
      if (!app.on) return `${app.name} off`;
      if (simulator && app.base?.startsWith(simulator.url))
        return `${app.name} SIMULATED (deliver with ${app.base}/_deliver)`;
      return app.name;
    })
    .join(', ');
}

/** The banner's line on inbound webhooks: the receivers, and whether GitHub is the simulator's. */
function webhooksLine(): string {
  if (!gateway.agents) return 'off (API_SERVICES)';
  const receivers = ['/webhook/{agent_id}', '/webhook/github', '/slack/events', '/automation/trigger'];
  const github = environment.GITHUB_API_BASE_URL;
  const simulated = simulator && github?.startsWith(simulator.url);
  return `${gateway.agents.url}: ${receivers.join(', ')}${simulated ? `; GitHub SIMULATED (deliver with ${github}/_deliver)` : ''}${environment.TOKEN_ENCRYPTION_KEY ? '' : ' (webhooks need TOKEN_ENCRYPTION_KEY)'}`;
}
