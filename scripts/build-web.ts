/**
 * `npm run build:web`: builds the web app (web/) into web/dist (scripts/lib/web-build.ts says how and when).
 * `--force` builds even when the output is newer than every source.
 */
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { build } from 'vite';
import { buildStamp, webBuildIsStale, webDist, webRoot, withBuildLock } from './lib/web-build.ts';
import { viteConfig } from '../web/vite.config.ts';

const force = process.argv.includes('--force');
const compressible = /\.(?:js|css|html|svg|json|txt)$/;

await withBuildLock(async () => {
  // Another builder may have finished while this one waited for the lock.
  if (!force && !webBuildIsStale()) return;
  const output = join(webRoot, `dist-${process.pid}`);
  rmSync(output, { recursive: true, force: true });
  await build({ ...viteConfig, logLevel: 'warn', build: { ...viteConfig.build, outDir: output, emptyOutDir: true } });
  for (const file of walk(output)) {
    if (!compressible.test(file)) continue;
    const body = readFileSync(file);
    writeFileSync(
      `${file}.br`,
      brotliCompressSync(body, {
        params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length },
      }),
    );
    writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
  }
  writeFileSync(join(output, '.build-stamp'), `${new Date().toISOString()}\n`);
  // Swapped in by two renames: a server reading the old output meanwhile finds whole files or none.
  const old = join(webRoot, `dist-old-${process.pid}`);
  try {
    renameSync(webDist, old);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  renameSync(output, webDist);
  rmSync(old, { recursive: true, force: true });
  process.stdout.write(`web app built into ${webDist} (${buildStamp})\n`);
});

function* walk(directory: string): Generator<string> {
  for (const entry of readdirSync(directory)) {
    const path = join(directory, entry);
    if (statSync(path).isDirectory()) yield* walk(path);
    else yield path;
  }
}
