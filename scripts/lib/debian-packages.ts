/**
 * System programs the tests need from Debian packages: Chromium (the browser that drives a published site's sandbox,
 * test/api/agents-sites.test.ts) and ffmpeg (video thumbnails, test/api/media-jobs.test.ts; also used by `npm start`
 * when installed), and what pgvector is built with (scripts/lib/pgvector.ts). When one is missing and this runs as
 * root on a Debian-like system, it is installed with apt-get (the package mirror is reachable on this machine kind;
 * `npx playwright install` is not). ensureDebianProgram returns the program's path, or null with the reason printed
 * when it cannot be had.
 */
import { spawnSync } from 'node:child_process';

export function ensureDebianProgram(
  program: string,
  { packageName = program, purpose }: { packageName?: string; purpose: string },
  log: (line: string) => void,
): string | null {
  const found = () => spawnSync('sh', ['-c', `command -v ${program}`], { encoding: 'utf8' }).stdout.trim() || null;
  const existing = found();
  if (existing) return existing;
  if (!canInstallDebianPackages()) {
    log(`${program} is not installed and cannot be installed here (needs root and apt-get): install it for ${purpose}`);
    return null;
  }
  installDebianPackage(packageName, purpose, log);
  return found();
}

/** apt-get's path when this process may install packages with it (root on a Debian-like system), else null. */
export function canInstallDebianPackages(): string | null {
  if (process.getuid?.() !== 0) return null;
  return spawnSync('sh', ['-c', 'command -v apt-get'], { encoding: 'utf8' }).stdout.trim() || null;
}

/**
 * `apt-get install` of one package, after an `apt-get update` when the first try fails (a fresh machine's package
 * lists may be missing or stale). Returns whether the install succeeded; false at once when apt-get cannot be used.
 */
export function installDebianPackage(packageName: string, purpose: string, log: (line: string) => void): boolean {
  const apt = canInstallDebianPackages();
  if (!apt) return false;
  log(`installing ${packageName} with apt-get for ${purpose} (once)`);
  const environment = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () =>
    spawnSync(apt, ['install', '-y', '--no-install-recommends', packageName], { stdio: 'inherit', env: environment });
  if (install().status === 0) return true;
  spawnSync(apt, ['update'], { stdio: 'inherit', env: environment });
  return install().status === 0;
}
