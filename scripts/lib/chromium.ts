/**
 * The browser the tests drive (a published site's sandbox, test/api/agents-sites.test.ts): Debian's Chromium. When it
 * is missing and this runs as root on a Debian-like system, `npm test` installs it with apt-get (the package mirror is
 * reachable on this machine kind; `npx playwright install` is not). Returns the binary's path, or null with the reason
 * printed when it cannot be had.
 */
import { spawnSync } from 'node:child_process';

export function ensureChromium(log: (line: string) => void): string | null {
  const found = () => spawnSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).stdout.trim() || null;
  const existing = found();
  if (existing) return existing;
  const apt = spawnSync('sh', ['-c', 'command -v apt-get'], { encoding: 'utf8' }).stdout.trim();
  if (!apt || process.getuid?.() !== 0) {
    log(
      'chromium is not installed and cannot be installed here (needs root and apt-get): install it for the browser test',
    );
    return null;
  }
  log('installing chromium with apt-get for the browser test (once)');
  const environment = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () =>
    spawnSync(apt, ['install', '-y', '--no-install-recommends', 'chromium'], { stdio: 'inherit', env: environment });
  if (install().status !== 0) {
    spawnSync(apt, ['update'], { stdio: 'inherit', env: environment });
    install();
  }
  return found();
}
