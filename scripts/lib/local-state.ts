/**
 * What `npm start` and `npm run cluster` both set up in their data directory before they start the platform's
 * processes, written once here: where sandboxes and media files live, the generated secrets, the simulator standing
 * in for every provider, and the one workflow bundle every process starts from.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { simulatedGoogle, simulatedProviders, simulatedToolServices } from './simulated-providers.ts';

type Environment = Record<string, string | undefined>;

/** Conversations' sandboxes (file tools, code_execute) and media result files live with the rest of the local state. */
export function localDirectories(environment: Environment, dataDir: string): void {
  environment.SANDBOX_DIR ||= join(dataDir, 'sandboxes');
  environment.MEDIA_DIR ||= join(dataDir, 'media');
}

/**
 * The master key and the key that encrypts OAuth refresh tokens at rest (activities/google/token-cipher.ts), when
 * the environment names none: generated once, kept in the data directory (mode 600).
 */
export function generatedSecrets(environment: Environment, dataDir: string): void {
  const kept = (file: string, generate: () => string) => {
    const path = join(dataDir, file);
    if (!existsSync(path)) writeFileSync(path, `${generate()}\n`, { mode: 0o600 });
    return readFileSync(path, 'utf8').trim();
  };
  environment.MASTER_KEY ||= kept('master-key', () => `te_${randomBytes(32).toString('base64url')}`);
  environment.TOKEN_ENCRYPTION_KEY ||= kept('token-key', () => randomBytes(32).toString('base64url'));
}

/**
 * Every provider played by the simulator at `simulatorUrl`: the model providers, the tools' services, and Google's
 * sign-in and workspace APIs unless GOOGLE_CLIENT_ID is set (scripts/lib/simulated-providers.ts). Simulated vectors
 * are hashed words, so RAG (which embeds with the default model) gets real ones from the local engine.
 */
export function simulateProviders(environment: Environment, simulatorUrl: string): void {
  Object.assign(environment, simulatedProviders(simulatorUrl), simulatedToolServices(simulatorUrl, environment));
  Object.assign(environment, simulatedGoogle(simulatorUrl, environment));
  environment.EMBEDDING_MODEL ||= 'local-embedding';
}

/**
 * Each API process and worker would bundle the workflow code at every start (5-10 s of CPU each, most of an API
 * restart's time): bundled once here for every start and restart, unless WORKFLOW_BUNDLE_PATH names a bundle built
 * ahead. (A traced process, OTEL_EXPORTER_OTLP_*ENDPOINT set, builds its own traced bundle.)
 */
export async function sharedWorkflowBundle(
  environment: Environment,
  dataDir: string,
  log: (line: string) => void,
): Promise<void> {
  if (environment.WORKFLOW_BUNDLE_PATH?.trim()) return;
  const path = join(dataDir, 'workflow-bundle.json');
  log('bundling the workflow code once for every process');
  // Imported here: the worker's modules are loaded only by the process that bundles (scripts/lib/prepare.ts).
  const { buildWorkflowBundleFile } = await import('../../worker/create-worker.ts');
  await buildWorkflowBundleFile(path);
  environment.WORKFLOW_BUNDLE_PATH = path;
}
