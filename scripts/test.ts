/**
 * `npm test`: type check, lint and format check, then jest (native ESM) against real Temporal and PostgreSQL.
 * Ends with the plain summary line `Tests: N passed, N failed` (CI reads it), from jest's JSON results.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { ensureDebianProgram } from './lib/debian-packages.ts';

const resultsFile = '.data/jest-results.json';
mkdirSync('.data', { recursive: true });

const steps: Array<[string, string[], Record<string, string>?]> = [
  ['tsc', ['--noEmit', '-p', 'tsconfig.json']],
  // The web app (web/) is a browser program with its own TypeScript project; its API client's types are generated
  // from the agent service's OpenAPI document first (scripts/build-web.ts).
  ['node', ['scripts/build-web.ts', '--types']],
  ['tsc', ['--noEmit', '-p', 'web/tsconfig.json']],
  ['eslint', ['.']],
  ['prettier', ['--check', '.', '--log-level', 'warn']],
  [
    'jest',
    ['--json', `--outputFile=${resultsFile}`, ...process.argv.slice(2)],
    { NODE_OPTIONS: '--experimental-vm-modules --no-warnings=ExperimentalWarning' },
  ],
];

// The published-site test drives a real browser, and video thumbnails are cut by ffmpeg: make sure both are there
// before jest starts.
const log = (line: string) => process.stdout.write(`[test] ${line}\n`);
ensureDebianProgram('chromium', { purpose: 'the browser test' }, log);
ensureDebianProgram('ffmpeg', { purpose: 'video thumbnails' }, log);

for (const [tool, args, environment] of steps) {
  process.stdout.write(`\n> ${tool} ${args.join(' ')}\n`);
  const result = spawnSync(`node_modules/.bin/${tool}`, args, {
    stdio: 'inherit',
    env: { ...process.env, ...environment },
  });
  if (tool === 'jest') printSummary();
  if (result.status !== 0) {
    process.stderr.write(`\n${tool} failed\n`);
    process.exit(result.status ?? 1);
  }
}

function printSummary(): void {
  try {
    const results = JSON.parse(readFileSync(resultsFile, 'utf8')) as { numPassedTests: number; numFailedTests: number };
    process.stdout.write(`\nTests: ${results.numPassedTests} passed, ${results.numFailedTests} failed\n`);
  } catch {
    process.stdout.write('\njest wrote no results\n');
  }
}
