/**
 * A real browser for the web app's tests (test/web/): Debian's Chromium (`npm test` installs it) driven by
 * playwright-core, the web app built first when its output is missing or stale (scripts/lib/web-build.ts, under a
 * lock, so test files running side by side build it once), and axe-core injected from node_modules to check a page.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ensureWebBuild } from '../../scripts/lib/web-build.ts';
import { startTestPlatform, type TestPlatform } from './platform.ts';
import { startTestSmtp, type TestSmtp } from './smtp.ts';

const require = createRequire(import.meta.url);
const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export async function launchBrowser(): Promise<Browser> {
  await ensureWebBuild();
  const executablePath = spawnSync('sh', ['-c', 'command -v chromium']).stdout.toString().trim() || '/usr/bin/chromium';
  return chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/**
 * The browser, a desktop-sized context and its page, as the web app's test files start: `cspViolations` collects
 * every Content Security Policy report the page logs (a test expects none).
 */
export async function openBrowserPage(): Promise<{
  browser: Browser;
  context: BrowserContext;
  page: Page;
  cspViolations: string[];
}> {
  const browser = await launchBrowser();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const cspViolations: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
  return { browser, context, page, cspViolations };
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

/**
 * The page's serious and critical accessibility violations by axe-core (WCAG 2.x A and AA rules and best practices).
 * Injected through the DevTools protocol, so the page's CSP (script-src 'self') does not stop it.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource);
  // A string, run in the page (this file is typed for Node, without the DOM's names).
  const violations = (await page.evaluate(
    "axe.run(document, { resultTypes: ['violations'] }).then((result) => result.violations)",
  )) as AxeViolation[];
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(({ id, impact, help, nodes }) => ({ id, impact, help, nodes: nodes.map(({ target }) => ({ target })) }));
}

/**
 * Logs `email` in as a person does: the login page's form, then the link of the mail that arrived at the test's
 * SMTP server, opened in the page.
 */
export async function logInByMail(
  page: Page,
  agentsUrl: string,
  smtp: { nextMail(to: string, timeoutMs?: number): Promise<{ text: string }> },
  email: string,
): Promise<void> {
  await page.goto(agentsUrl);
  await page.getByLabel('E-mail address').fill(email);
  await page.getByRole('button', { name: 'Send me a login link' }).click();
  await page.getByText(`We sent a login link to ${email}`).waitFor();
  const mail = await smtp.nextMail(email, 15_000);
  const link = /http:\/\/127\.0\.0\.1:\d+\/auth\/verify\?token=[A-Za-z0-9_-]+/.exec(mail.text)![0];
  await page.goto(link);
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

/** A person logged into the web app in Chromium, on a test platform and SMTP server of the test file's own. */
export interface PersonInBrowser {
  platform: TestPlatform;
  smtp: TestSmtp;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  cspViolations: string[];
  /** Closes the browser, the platform and the SMTP server (each as far as it started). */
  close(): Promise<void>;
}

/**
 * How the person-facing test files start: an SMTP server, a platform sending its mail there (`environment` adds the
 * file's own settings), the account of `email` made on the business plan by the operator's key (so every model is the
 * person's to choose), and the person logged in by a magic link in a fresh browser; `clipboard` lets the page read and
 * write the clipboard (Copy buttons).
 */
export async function startPersonInBrowser(
  email: string,
  options: { environment?: (simulatorUrl: string) => Record<string, string>; clipboard?: boolean } = {},
): Promise<PersonInBrowser> {
  const smtp = await startTestSmtp();
  let platform: TestPlatform | undefined;
  let opened: Awaited<ReturnType<typeof openBrowserPage>> | undefined;
  const close = async () => {
    await opened?.browser.close();
    await platform?.close();
    await smtp.close();
  };
  try {
    platform = await startTestPlatform((simulatorUrl) => ({
      SMTP_URL: smtp.url,
      ...options.environment?.(simulatorUrl),
    }));
    await platform.createKey(email, 'business');
    opened = await openBrowserPage();
    if (options.clipboard) {
      await opened.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: platform.agentsUrl });
    }
    await logInByMail(opened.page, platform.agentsUrl, smtp, email);
  } catch (error) {
    await close();
    throw error;
  }
  return { platform, smtp, ...opened, close };
}
