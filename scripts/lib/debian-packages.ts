/**
 * System programs the tests need from Debian packages: Chromium (the browser that drives a published site's sandbox,
 * test/api/agents-sites.test.ts) and ffmpeg (video thumbnails, test/api/media-jobs.test.ts; also used by `npm start`
 * when installed). When one is missing and this runs as root on a Debian-like system, `npm test` installs it with
 * apt-get (the package mirror is reachable on this machine kind; `npx playwright install` is not). Returns the
 * program's path, or null with the reason printed when it cannot be had.
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
  const apt = spawnSync('sh', ['-c', 'command -v apt-get'], { encoding: 'utf8' }).stdout.trim();
  if (!apt || process.getuid?.() !== 0) {
    log(`${program} is not installed and cannot be installed here (needs root and apt-get): install it for ${purpose}`);
    return null;
  }
  log(`installing ${packageName} with apt-get for ${purpose} (once)`);
  const environment = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () =>
    spawnSync(apt, ['install', '-y', '--no-install-recommends', packageName], { stdio: 'inherit', env: environment });
  if (install().status !== 0) {
    spawnSync(apt, ['update'], { stdio: 'inherit', env: environment });
    install();
  }
  return found();
}
