/**
 * `node bench/flamegraph.ts <profile> <out.png> [title]`: a flame graph of a profile as an image, drawn by speedscope
 * (a devDependency; its "Left Heavy" view: each call stack's time merged and sorted, widest first) in Chromium, and
 * screenshotted. The profile is a V8 `.cpuprofile` (BENCH_PROFILE=API writes one) or the text of `perf script` for one
 * process or thread (BENCH_PERF=1 records every platform process: `perf script -i <data> --tid <tid>`; with
 * FLAMEGRAPH_MERGE_THREADS=1 all of a process's threads in one graph); speedscope reads both.
 * docs/benchmarks.md shows what these images are of.
 */
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const [profileFile, outFile, title = path.basename(process.argv[2] ?? '')] = process.argv.slice(2);
if (!profileFile || !outFile) {
  process.stderr.write('usage: node bench/flamegraph.ts <profile> <out.png> [title]\n');
  process.exit(2);
}
/**
 * The text of `perf script` has a header line per sample (`command tid time: ...`) and speedscope draws one profile
 * per thread; a Go server's goroutines run on whichever thread is free, so its threads are merged into one here.
 */
const mergeThreads = process.env.FLAMEGRAPH_MERGE_THREADS === '1';
const profileBody = async () => {
  const text = await readFile(profileFile);
  if (!mergeThreads) return text;
  return text.toString('utf8').replace(/^\S[^\n]*?\s+\d+\s+(\d+\.\d+:)/gm, 'threads 1 $1');
};
const release = fileURLToPath(new URL('../node_modules/speedscope/dist/release/', import.meta.url));
const types: Record<string, string> = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

// speedscope fetches the profile from a URL: both it and the profile are served here, on loopback.
const server = createServer((request, response) => {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const file =
    url.pathname === '/profile' ? profileFile : path.join(release, path.normalize(url.pathname).replace(/^\/+/, ''));
  if (url.pathname !== '/profile' && !file.startsWith(release)) {
    response.writeHead(404).end();
    return;
  }
  (url.pathname === '/profile' ? profileBody() : readFile(file)).then(
    (body) => {
      response.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' });
      response.end(body);
    },
    () => response.writeHead(404).end(),
  );
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const address = server.address();
const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

const executablePath = spawnSync('sh', ['-c', 'command -v chromium']).stdout.toString().trim() || 'chromium';
const browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
try {
  const page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
  const hash = `profileURL=${encodeURIComponent(`${base}/profile`)}&title=${encodeURIComponent(title)}`;
  await page.goto(`${base}/index.html#${hash}`);
  await page.getByText('Left Heavy').click();
  // Drawn on a canvas once the profile is parsed: the view's canvas is there when it is.
  await page.locator('canvas').first().waitFor();
  await page.waitForLoadState('networkidle');
  await page.screenshot({ path: outFile });
} finally {
  await browser.close();
  server.close();
}
