/**
 * The operator console (`/admin`, docs/web-app.md "Operator console") in a real browser: Debian's Chromium driven by
 * playwright-core against a test platform with a real SMTP server. A person logs in through the mail's magic link and
 * is refused the console (not an operator: the API refuses the audit log and a plan change to that browser too); made
 * an admin from a shell (`npm run admin -- grant-admin`), they find a customer by the start of the address, change the
 * customer's plan and limits with a reason (the customer's next request meets them), adjust the customer's credits
 * with a reason using the keyboard alone and see the ledger entry (the balance moved by exactly that, once, though the
 * button was pressed twice), see a refusal in the API's words, revoke one of the customer's keys through the confirm
 * step with a reason (the key then gets 401), see each of these once in the audit log, on the customer's page and on
 * the log's own (with the customer's keys the master key made), read a turn's trace with its provider attempts and
 * Temporal link, and see provider health and the day's failed workflows. Every console page
 * passes axe-core (no serious or critical violation) at 375 and 1280 px in the light and dark themes, with nothing
 * wider than the screen and no CSP violation. With WEB_SCREENSHOTS=<folder> the pages are photographed into it
 * (docs/web/ holds them).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { callDirective } from '../helpers/agents.ts';
import { openBrowserPage, logInByMail, seriousViolations } from '../helpers/browser.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { readSse } from '../helpers/sse.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { waitFor } from '../helpers/wait.ts';

let platform: TestPlatform;
let smtp: TestSmtp;
let browser: Browser;
let page: Page;
const suffix = randomBytes(3).toString('hex');
const adminEmail = `operator-${suffix}@example.com`;
const customerEmail = `customer-${suffix}@example.com`;
let customer: { id: string; key: string; user_id: string };
let laptop: { id: string; key: string };
let cspViolations: string[];
const screenshots = process.env.WEB_SCREENSHOTS;
const repository = fileURLToPath(new URL('../..', import.meta.url));

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

beforeAll(async () => {
  smtp = await startTestSmtp();
  platform = await startTestPlatform({ SMTP_URL: smtp.url });
  customer = await platform.createKey(customerEmail, 'pro');
  // A second key of the customer's, to revoke.
  const created = await platform.fetch('/api/v1/apikeys', {
    method: 'POST',
    key: platform.masterKey,
    body: JSON.stringify({ email: customerEmail, name: 'laptop' }),
  });
  laptop = (await created.json()) as { id: string; key: string };
  // A turn with a tool call, for the activity page's trace.
  const turn = await platform.agents(`/chat/stream/web:${randomUUID()}`, {
    method: 'POST',
    key: customer.key,
    body: JSON.stringify({
      message: `What is 6 * 7? ${callDirective('calculator', { expression: '6 * 7' })}`,
      preferred_agents: ['general'],
    }),
  });
  expect(turn.status).toBe(200);
  expect((await readSse(turn)).some((event) => (event.data as Json).type === 'cost')).toBe(true);
  // A completion through the gateway, for the activity page's requests.
  await platform
    .openai(customer.key)
    .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello' }] });
  ({ browser, page, cspViolations } = await openBrowserPage());
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await platform?.close();
  await smtp?.close();
});

async function expectAccessible(): Promise<void> {
  await page.waitForLoadState('networkidle');
  expect(await seriousViolations(page)).toEqual([]);
  // Nothing wider than the screen: wide tables scroll inside their own region.
  const fits = await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth');
  expect({ page: page.url(), fits }).toEqual({ page: page.url(), fits: true });
}

/** The page at the current width, as tall as its content (the shell scrolls inside `main`, not the document). */
async function photograph(name: string): Promise<void> {
  if (!screenshots) return;
  mkdirSync(screenshots, { recursive: true });
  await page.evaluate("document.querySelector('main').scrollTop = 0");
  const viewport = page.viewportSize()!;
  const height = (await page.evaluate(
    "document.querySelector('main').scrollHeight + document.querySelector('.topbar').offsetHeight",
  )) as number;
  await page.setViewportSize({ width: viewport.width, height: Math.min(Math.max(height, viewport.height), 3000) });
  await page.screenshot({ path: `${screenshots}/${name}.png` });
  await page.setViewportSize(viewport);
}

/** One of the console's sections by its own navigation. */
async function openSection(name: 'Overview' | 'Users' | 'Activity' | 'Audit log'): Promise<void> {
  await page.getByRole('navigation', { name: 'Operator console' }).getByRole('link', { name, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: name === 'Overview' ? 'Operator console' : name }).waitFor();
}

const balanceOf = async (key: string) =>
  (((await (await platform.agents('/auth/me', { key })).json()) as Json).credits as Json).balance as number;
const planOf = async (key: string) =>
  (((await (await platform.agents('/auth/me', { key })).json()) as Json).user as Json).plan as string;

describe('the operator console', () => {
  it('tells a person who is not an operator so', async () => {
    await logInByMail(page, platform.agentsUrl, smtp, adminEmail);
    await expect(
      page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Admin', exact: true }).count(),
    ).resolves.toBe(0);
    await page.goto(`${platform.agentsUrl}/admin`);
    await page.getByRole('heading', { level: 1, name: 'Not an operator' }).waitFor();
    await page.getByText(/You are not an operator of this deployment/).waitFor();
    await expectAccessible();
    await photograph('admin-refused-1280');
    // The API says the same to this browser.
    const answers = await page.evaluate(async (userId) => {
      const ask = async (path: string, init: RequestInit = {}) => {
        const response = await fetch(path, {
          ...init,
          headers: { accept: 'application/json', 'content-type': 'application/json' },
        });
        return { status: response.status, type: ((await response.json()) as Json).error?.type };
      };
      return [
        await ask('/admin/api/users'),
        await ask('/admin/api/audit'),
        await ask(`/admin/api/users/${userId}/account`, {
          method: 'PATCH',
          body: JSON.stringify({ plan: 'free', reason: 'Not mine to change' }),
        }),
      ];
    }, customer.user_id);
    expect(answers).toEqual([
      { status: 403, type: 'permission_denied' },
      { status: 403, type: 'permission_denied' },
      { status: 403, type: 'permission_denied' },
    ]);
    expect(await planOf(customer.key)).toBe('pro');
  });

  it('opens for the same person once a shell grants the admin role', async () => {
    await promisify(execFile)(process.execPath, ['scripts/admin.ts', 'grant-admin', '--email', adminEmail], {
      cwd: repository,
      env: { ...process.env, DATABASE_URL: platform.databaseUrl, NODE_OPTIONS: '' },
    });
    await page.goto(platform.agentsUrl);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Admin', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Operator console' }).waitFor();
    const openai = page.getByTestId('provider-openai');
    await openai.getByText('Healthy').waitFor();
    await page.getByRole('heading', { name: 'Failed workflows, last 24 hours' }).waitFor();
    // The capacity queue (docs/capacity-queue.md): nothing waits on this quiet platform.
    await page.getByRole('heading', { name: 'Capacity queue' }).waitFor();
    await page.getByTestId('queue-empty').waitFor();
    await page
      .getByTestId('platform-totals')
      .getByText(/^1 turn \(0 failed\)/)
      .waitFor();
    await expectAccessible();
    await photograph('admin-overview-1280');
  });

  it('finds a customer by the start of the address and changes the plan and limits, met by the next request', async () => {
    await openSection('Users');
    const search = page.getByRole('searchbox', { name: 'Find users by the start of their e-mail address, or by id' });
    // Not any part of the address: its start.
    await search.fill(suffix);
    await search.press('Enter');
    await page.getByText(`No user’s address starts with “${suffix}”`).waitFor();
    await search.fill(`CUSTOMER-${suffix}`);
    await search.press('Enter');
    await page.getByText(`1 user whose address starts with “CUSTOMER-${suffix}”`).waitFor();
    await expectAccessible();
    await page.getByRole('link', { name: customerEmail }).click();
    await page.getByRole('heading', { level: 1, name: customerEmail }).waitFor();
    await page.getByRole('option', { name: /^starter: 50,000 credits a month/ }).waitFor({ state: 'attached' });

    // Starter, at most 7 requests an hour, gpt-4o-mini only; a reason for the audit log.
    await page.getByLabel('Plan', { exact: true }).selectOption('starter');
    await page.getByLabel('Requests an hour').selectOption('number');
    await page.getByLabel('How many an hour').fill('7');
    await page.getByLabel('Models', { exact: true }).selectOption('list');
    await page.getByLabel('Model ids, separated by commas').fill('gpt-4o-mini');
    await page.getByLabel('Reason for the change').fill('Trial on the starter plan');
    await page.getByLabel('Reason for the change').press('Enter');
    await page.getByRole('status').filter({ hasText: 'Saved: plan starter' }).waitFor();
    await page
      .getByTestId('user-plan')
      .filter({ hasText: /^starter$/ })
      .waitFor();
    // The customer's next request meets the change.
    expect(await planOf(customer.key)).toBe('starter');
    const refused = await platform.fetch('/v1/chat/completions', {
      method: 'POST',
      key: customer.key,
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(refused.status).toBe(403);
    const served = await platform.fetch('/v1/chat/completions', {
      method: 'POST',
      key: customer.key,
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(served.status).toBe(200);
    expect(served.headers.get('x-ratelimit-limit-hour')).toBe('7');
    // The form shows what is in force now; saving it again changes nothing.
    await expect(page.getByLabel('How many an hour').inputValue()).resolves.toBe('7');
    await page.getByLabel('Reason for the change').fill('Again');
    await page.getByRole('button', { name: 'Save plan and limits' }).click();
    await page.getByRole('status').filter({ hasText: 'Nothing to save' }).waitFor();
    const entry = page.getByTestId('audit-entry').filter({ hasText: 'Trial on the starter plan' });
    await entry.waitFor();
    await expect(entry.textContent()).resolves.toMatch(/Plan or limits changed.*plan pro → starter/);
    // Once; the other two entries are the customer's keys, made by the master key before the test.
    await expect(page.getByTestId('audit-entry').filter({ hasText: 'Plan or limits changed' }).count()).resolves.toBe(
      1,
    );
    await expect(page.getByTestId('audit-entry').count()).resolves.toBe(3);
    await expectAccessible();
  });

  it('adjusts the customer’s credits with a reason, by keyboard, and sees the ledger entry', async () => {
    const before = await balanceOf(customer.key);

    // The keyboard alone: the amount, Tab to the reason, Enter to send.
    await page.getByLabel('Credits (negative to take back)').focus();
    await page.keyboard.type('500');
    await page.keyboard.press('Tab');
    await page.keyboard.type('Goodwill for the outage');
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: '+500 credits' }).waitFor();
    await page.getByTestId('ledger-entry').filter({ hasText: 'Goodwill for the outage' }).waitFor();
    const newest = page.getByTestId('ledger-entry').first();
    await expect(newest.textContent()).resolves.toMatch(
      new RegExp(`adjust\\s*\\+500\\s*Goodwill for the outage \\(by ${adminEmail.replace(/\./g, '\\.')}\\)`),
    );
    expect(await balanceOf(customer.key)).toBe(before + 500);
    await expectAccessible();

    // A button pressed twice: one adjustment.
    await page.getByLabel('Credits (negative to take back)').fill('25');
    await page.getByLabel('Reason', { exact: true }).fill('Double-clicked bonus');
    await page.getByRole('button', { name: 'Adjust credits' }).dblclick();
    await page.getByRole('status').filter({ hasText: '+25 credits' }).waitFor();
    const bonus = page.getByTestId('ledger-entry').filter({ hasText: 'Double-clicked bonus' });
    await bonus.first().waitFor();
    await page.waitForLoadState('networkidle');
    expect(await balanceOf(customer.key)).toBe(before + 525);
    await expect(bonus.count()).resolves.toBe(1);
    const adjustments = await platform.agents(`/admin/api/users/${customer.user_id}/ledger?kind=adjust`, {
      key: platform.masterKey,
    });
    expect(((await adjustments.json()) as Json).entries.map((entry: Json) => entry.amount)).toEqual([25, 500]);

    // Refused in the API's words.
    await page.getByLabel('Credits (negative to take back)').fill('-99999999');
    await page.getByLabel('Reason', { exact: true }).fill('Take it all back');
    await page.getByRole('button', { name: 'Adjust credits' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(
      /The adjustment was refused: .*would leave less than nothing/,
    );
    expect(await balanceOf(customer.key)).toBe(before + 525);
  });

  it('revokes one of the customer’s keys after a confirm step with a reason, and the key is refused', async () => {
    expect((await platform.agents('/auth/me', { key: laptop.key })).status).toBe(200);
    await page.getByRole('button', { name: 'Revoke key laptop' }).click();
    const confirm = page.getByRole('group', { name: 'Confirm revoking key laptop' });
    // Escape goes back; nothing revoked.
    await confirm.getByRole('button', { name: 'Yes, revoke laptop' }).waitFor();
    await expectAccessible();
    await page.keyboard.press('Escape');
    await confirm.waitFor({ state: 'detached' });
    expect((await platform.agents('/auth/me', { key: laptop.key })).status).toBe(200);
    // Focus lands on the reason: typed, Enter revokes.
    await page.getByRole('button', { name: 'Revoke key laptop' }).click();
    // (Waited for: the focus moves once the confirmation has rendered, later on a busy machine. Read through the
    // DevTools protocol, as the CSP allows, where Playwright's waitForFunction would evaluate a string in the page.)
    await waitFor(
      'the focus on the reason',
      async () =>
        (await page.evaluate(
          'document.activeElement && document.activeElement.labels && document.activeElement.labels[0] && document.activeElement.labels[0].textContent',
        )) === 'Reason for revoking',
    );
    await page.keyboard.type('Left on a stolen laptop');
    await page.keyboard.press('Enter');
    await page.getByText('Revoked key laptop: it is refused from now on.').waitFor();
    await waitFor(
      'the key refused',
      async () => (await platform.agents('/auth/me', { key: laptop.key })).status === 401,
    );
    expect((await platform.agents('/auth/me', { key: customer.key })).status).toBe(200);
    // Each action of this page once in the customer's audit log, newest first, with its reason.
    await page.getByTestId('audit-entry').filter({ hasText: 'Left on a stolen laptop' }).waitFor();
    const entries = await page.getByTestId('audit-entry').allTextContents();
    expect(entries).toEqual([
      expect.stringMatching(/Key revoked.*Left on a stolen laptop.*laptop \(te_/),
      expect.stringMatching(/Credits adjusted.*Double-clicked bonus.*\+25 credits/),
      expect.stringMatching(/Credits adjusted.*Goodwill for the outage.*\+500 credits/),
      expect.stringMatching(/Plan or limits changed.*Trial on the starter plan/),
      // The customer's keys, made by the master key (the gateway's POST /api/v1/apikeys) before the test.
      expect.stringMatching(
        /the master key\s*Key created\s*none given\s*laptop \(te_.*\); existing account on plan pro/,
      ),
      expect.stringMatching(
        /the master key\s*Key created\s*none given\s*unnamed key \(te_.*\); new account on plan pro/,
      ),
    ]);
    for (const text of entries.slice(0, 4)) expect(text).toContain(adminEmail);
    await photograph('admin-user-1280');
    await page.setViewportSize({ width: 375, height: 812 });
    await expectAccessible();
    await photograph('admin-user-375');
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('lists every operator action in the audit log, with the role the shell granted', async () => {
    await openSection('Audit log');
    await page.getByTestId('audit-entry').first().waitFor();
    const entries = await page.getByTestId('audit-entry').allTextContents();
    expect(entries).toHaveLength(7);
    expect(entries[4]).toMatch(/a shell \(npm run admin\)Admin role granted/);
    expect(entries.filter((text) => text.includes(customerEmail))).toEqual([
      ...entries.slice(0, 4),
      ...entries.slice(5),
    ]);
    expect(entries.slice(5)).toEqual([
      expect.stringMatching(/the master keyKey created/),
      expect.stringMatching(/the master keyKey created/),
    ]);
    // One action's entries.
    await page.getByLabel('Action').selectOption('key.revoke');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/action=key\.revoke/);
    const entryCount = (count: number) =>
      waitFor(`${count} entries shown`, async () => (await page.getByTestId('audit-entry').count()) === count);
    await entryCount(1);
    await expect(page.getByTestId('audit-entry').textContent()).resolves.toMatch(/Key revoked/);
    await expectAccessible();
    await page.getByLabel('Action').selectOption('');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL((url) => !url.search.includes('action'));
    await entryCount(7);
    await photograph('admin-audit-1280');
  });

  it('shows recent turns with their traces and Temporal links', async () => {
    await openSection('Activity');
    const turn = page.getByTestId('turn').filter({ hasText: customerEmail }).first();
    await turn.waitFor();
    await expect(turn.getByRole('link', { name: /^Temporal workflow chat-/ }).getAttribute('href')).resolves.toMatch(
      /^http:\/\/127\.0\.0\.1:\d+\/namespaces\/default\/workflows\/chat-[\w-]+$/,
    );
    await turn.getByRole('button', { name: /trace of the turn/i }).click();
    const trace = page.getByTestId('turn-trace');
    await trace.getByText('Tools: calculator (ok)').waitFor({ timeout: 30_000 });
    await expect(trace.getByRole('table', { name: 'Provider attempts' }).textContent()).resolves.toMatch(/succeeded/);
    await expect(turn.getByRole('button', { name: /trace of the turn/i }).getAttribute('aria-expanded')).resolves.toBe(
      'true',
    );
    await page.getByTestId('request').first().waitFor();
    await expectAccessible();
    await photograph('admin-activity-1280');
  });

  it('passes axe-core on every console page at phone and desktop widths, light and dark', async () => {
    const pages = [
      ['/admin', 'Operator console'],
      ['/admin/users', 'Users'],
      [`/admin/users/${customer.user_id}`, customerEmail],
      ['/admin/activity', 'Activity'],
      ['/admin/audit', 'Audit log'],
    ] as const;
    for (const theme of ['light', 'dark'] as const) {
      // Chosen in the account menu at desktop width (a phone has it behind the Menu button); kept across pages.
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.goto(`${platform.agentsUrl}/admin`);
      await page.getByRole('combobox', { name: 'Theme' }).selectOption(theme);
      for (const width of [375, 1280]) {
        await page.setViewportSize({ width, height: width === 375 ? 812 : 800 });
        for (const [path, heading] of pages) {
          await page.goto(`${platform.agentsUrl}${path}`);
          await page.getByRole('heading', { level: 1, name: heading }).waitFor();
          await expectAccessible();
          if (theme === 'dark' && path === '/admin') await photograph(`admin-overview-${width}-dark`);
          if (theme === 'light' && width === 375 && path === '/admin') await photograph('admin-overview-375');
        }
      }
    }
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(cspViolations).toEqual([]);
    // Nothing of the console is kept in the browser but the theme choice.
    expect(await page.evaluate('Object.keys(localStorage)')).toEqual(['tessera-theme']);
  });
});
