/**
 * Building the web app (web/, docs/web-app.md): Vite bundles web/src into web/dist with hashed names, then every
 * text file is compressed once here (brotli and gzip beside it), so the agent service (api/agents/web.ts) sends the
 * smaller form without compressing per request.
 *
 * `ensureWebBuild` builds only when the output is missing or older than a source: `npm start` and the browser tests
 * call it, so an unchanged tree costs a few `stat` calls. The build runs in a child process (`node
 * scripts/build-web.ts`) under a lock directory, so two test files, or a test and `npm start`, never write the
 * output at the same time; it is written to a fresh folder and swapped in by rename.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repositoryRoot = fileURLToPath(new URL('../../', import.meta.url));
export const webRoot = join(repositoryRoot, 'web');
export const webDist = join(webRoot, 'dist');
/** Written last by a build: its time is the build's. */
export const buildStamp = join(webDist, '.build-stamp');
const lockDir = join(webRoot, '.build-lock');

/** The newest modification time among the app's sources (web/ less its output) and the build's own code. */
export function newestSource(): number {
  let newest = 0;
  const visit = (path: string) => {
    const stat = statSync(path);
    if (stat.isDirectory()) {
      for (const entry of readdirSync(path)) {
        if (entry === 'node_modules' || entry.startsWith('dist') || entry.startsWith('.build')) continue;
        visit(join(path, entry));
      }
    } else {
      newest = Math.max(newest, stat.mtimeMs);
    }
  };
  visit(webRoot);
  visit(fileURLToPath(import.meta.url));
  visit(join(repositoryRoot, 'scripts', 'build-web.ts'));
  return newest;
}

export function webBuildIsStale(): boolean {
  if (!existsSync(buildStamp)) return true;
  return statSync(buildStamp).mtimeMs < newestSource();
}

/** Builds the app when it is missing or stale; `log` hears what happens. */
export async function ensureWebBuild(log: (line: string) => void = () => undefined): Promise<void> {
  if (!webBuildIsStale()) return;
  const started = Date.now();
  log('building the web app (web/ changed since the last build)');
  const node = process.execPath;
  await new Promise<void>((resolve, reject) => {
    const child = spawn(node, [join(repositoryRoot, 'scripts', 'build-web.ts')], {
      cwd: repositoryRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`building the web app failed (exit ${code}):\n${output}`)),
    );
  });
  log(`web app built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** Runs `build` while holding the lock directory (waiting for another builder, whose lock goes stale after 2 min). */
export async function withBuildLock<T>(build: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 5 * 60_000;
  for (;;) {
    try {
      mkdirSync(lockDir);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const age = Date.now() - (statSync(lockDir, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 120_000) rmSync(lockDir, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`the web build lock ${relative(repositoryRoot, lockDir)} stays taken`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  try {
    return await build();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}
