/** `npm test`: type check, lint and format check, then jest (native ESM) against real Temporal and PostgreSQL. */
import { spawnSync } from 'node:child_process';

const steps: Array<[string, string[], Record<string, string>?]> = [
  ['tsc', ['--noEmit', '-p', 'tsconfig.json']],
  ['eslint', ['.']],
  ['prettier', ['--check', '.', '--log-level', 'warn']],
  ['jest', process.argv.slice(2), { NODE_OPTIONS: '--experimental-vm-modules --no-warnings=ExperimentalWarning' }],
];

for (const [tool, args, environment] of steps) {
  process.stdout.write(`\n> ${tool} ${args.join(' ')}\n`);
  const result = spawnSync(`node_modules/.bin/${tool}`, args, {
    stdio: 'inherit',
    env: { ...process.env, ...environment },
  });
  if (result.status !== 0) {
    process.stderr.write(`\n${tool} failed\n`);
    process.exit(result.status ?? 1);
  }
}
