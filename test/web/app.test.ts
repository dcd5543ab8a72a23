/**
 * The web app in a real browser (docs/web-app.md): Debian's Chromium driven by playwright-core against one test
 * platform with a real SMTP server. A person logs in through the mail's magic link, chats with streaming, approves
 * and rejects a tool call, cancels a loop, reloads mid-stream and sees the turn resume, creates and revokes a key,
 * publishes a site and opens it, creates a schedule and sees it fire; every page passes axe-core (no serious or
 * critical violation) at phone and desktop widths, under the CSP, with the API's own words for a refused request.
 * With WEB_SCREENSHOTS=<folder>, the main pages are photographed at 375 and 1280 px into it (docs/web/ holds them).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { openBrowserPage, seriousViolations } from '../helpers/browser.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { startTestSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { waitFor } from '../helpers/wait.ts';

let platform: TestPlatform;
let smtp: TestSmtp;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const email = `web-${Date.now()}@example.com`;
let cspViolations: string[];
const screenshots = process.env.WEB_SCREENSHOTS;

beforeAll(async () => {
  smtp = await startTestSmtp();
  platform = await startTestPlatform({
    SMTP_URL: smtp.url,
    // Schedules fire every two seconds here (a 6-field cron).
    SCHEDULE_MIN_INTERVAL_SECONDS: '1',
  });
  ({ browser, context, page, cspViolations } = await openBrowserPage());
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await platform?.close();
  await smtp?.close();
});

async function expectAccessible(target: Page = page): Promise<void> {
  expect(await seriousViolations(target)).toEqual([]);
}

/** A published site's text as a browser gets it from its own host (`<name>.localhost`, which Chromium resolves). */
async function siteText(subdomain: string): Promise<string> {
  const site = await context.newPage();
  try {
    const response = await site.goto(platform.agentsUrl.replace('127.0.0.1', `${subdomain}.localhost`) + '/');
    return response!.status() === 404 ? 'not found' : ((await site.textContent('body')) ?? '');
  } finally {
    await site.close();
  }
}

/** Opens a chat of the sidebar by its title (on a phone the sidebar opens first). */
async function openChat(title: RegExp): Promise<void> {
  const chats = page.getByRole('button', { name: 'Chats', exact: true });
  if (await chats.isVisible()) await chats.click();
  await page.getByRole('complementary', { name: 'Chats' }).getByRole('link', { name: title }).click();
  await page.locator('.message.assistant').first().waitFor();
}

/** Opens one of the app's pages by its navigation link, as a person would. */
async function openPage(name: string): Promise<void> {
  const menu = page.getByRole('button', { name: 'Menu' });
  if (await menu.isVisible()) await menu.click();
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();
}

describe('the web app', () => {
  it('serves its page under a strict CSP and its hashed assets for a year', async () => {
    const response = await fetch(`${platform.agentsUrl}/`, { headers: { accept: 'text/html' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-cache');
    const csp = response.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    const html = await response.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const script = /src="(\/assets\/index-[\w-]+\.js)"/.exec(html)![1]!;
    const asset = await fetch(`${platform.agentsUrl}${script}`, { headers: { 'accept-encoding': 'br' } });
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(asset.headers.get('content-encoding')).toBe('br');
    // API paths stay the API's, even for a browser.
    const agents = await fetch(`${platform.agentsUrl}/agents`, { headers: { accept: 'text/html' } });
    expect(agents.headers.get('content-type')).toContain('application/json');
    const unknown = await fetch(`${platform.agentsUrl}/no-such-page`, { headers: { accept: 'text/html' } });
    expect(unknown.status).toBe(404);
  });

  it('logs in through the magic link of a real mail', async () => {
    await page.goto(platform.agentsUrl);
    // Waited for, not checked at once: the page renders once its script has loaded, later on a busy machine.
    await page.getByRole('heading', { name: 'Log in to Tessera' }).waitFor();
    await expectAccessible();
    // This deployment has no Google login: the page says so in the API's words.
    await page.getByRole('link', { name: 'Log in with Google' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/Google login is not configured/);
    await page.getByLabel('E-mail address').fill(email);
    await page.getByRole('button', { name: 'Send me a login link' }).click();
    await page.getByText(`We sent a login link to ${email}`).waitFor();
    const mail = await smtp.nextMail(email, 15_000);
    const link = /http:\/\/127\.0\.0\.1:\d+\/auth\/verify\?token=[A-Za-z0-9_-]+/.exec(mail.text)![0];
    await page.goto(link);
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    await page.getByText(email).waitFor();
    await expect(page.getByTestId('credit-balance').textContent()).resolves.toMatch(/\d/);
    // The session is the HttpOnly cookie only: nothing a script could read.
    expect(await page.evaluate('document.cookie')).toBe('');
    expect(await page.evaluate('Object.keys(localStorage)')).toEqual([]);
  });

  it('chats with a streamed answer naming the agent, its confidence and the turn’s cost', async () => {
    await page.getByRole('textbox', { name: 'Message' }).fill('Write a short greeting for a friend');
    await page.getByRole('textbox', { name: 'Message' }).press('Enter');
    const answer = page.locator('.message.assistant.live').last();
    await answer.getByTestId('turn-cost').waitFor({ timeout: 60_000 });
    await expect(answer.locator('.markdown').textContent()).resolves.toMatch(/Simulated/);
    await expect(answer.locator('.badge').textContent()).resolves.toMatch(/\d+% confident/);
    expect(page.url()).toMatch(/\/chats\/web%3A[0-9a-f-]+$/);
    // The new chat is in the sidebar, titled by its first message.
    await page.getByRole('complementary', { name: 'Chats' }).getByText('Write a short greeting').waitFor();
    await expectAccessible();
  });

  it('creates a custom agent whose tool asks for approval, then approves one call and rejects another', async () => {
    await openPage('Agents');
    await page.getByRole('button', { name: 'New custom agent' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Publisher');
    await page.getByLabel('Description (what the router reads to pick it)').fill('Publishes small web pages');
    await page.getByLabel('System prompt').fill('You publish web pages for the user.');
    await page.getByLabel('Other tools, by name (comma-separated)').fill('publish_site');
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByText('Created Publisher.').waitFor();
    await expectAccessible();

    await openPage('Chat');
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByRole('combobox', { name: 'Agent', exact: true }).selectOption({ label: 'Publisher' });
    const call = (subdomain: string) =>
      `Publish it [[call publish_site ${JSON.stringify({ subdomain, title: 'From chat', html: '<p>approved page</p>' })}]]`;

    await page.getByRole('textbox', { name: 'Message' }).fill(call('approved-page'));
    await page.getByRole('button', { name: 'Send' }).click();
    const approval = page.getByRole('region', { name: 'Approval for publish_site' }).last();
    await approval.getByRole('button', { name: 'Approve' }).waitFor({ timeout: 60_000 });
    await expectAccessible();
    await approval.getByRole('button', { name: 'Approve' }).click();
    await approval.getByText('Approved', { exact: true }).waitFor();
    await page.locator('.message.assistant.live').last().getByTestId('turn-cost').waitFor({ timeout: 60_000 });
    expect(await siteText('approved-page')).toContain('approved page');

    await page.getByRole('textbox', { name: 'Message' }).fill(call('rejected-page'));
    await page.getByRole('button', { name: 'Send' }).click();
    const second = page.getByRole('region', { name: 'Approval for publish_site' }).last();
    await second.getByRole('button', { name: 'Reject' }).waitFor({ timeout: 60_000 });
    await second.getByLabel('Reason (optional)').fill('not now');
    await second.getByRole('button', { name: 'Reject' }).click();
    await second.getByText('Rejected: not now').waitFor();
    await page.locator('.message.assistant.live').last().getByTestId('turn-cost').waitFor({ timeout: 60_000 });
    expect(await siteText('rejected-page')).toBe('not found');
    if (screenshots) {
      mkdirSync(screenshots, { recursive: true });
      await page.screenshot({ path: `${screenshots}/chat-approvals-1280.png` });
      await page.setViewportSize({ width: 375, height: 812 });
      await page.screenshot({ path: `${screenshots}/chat-approvals-375.png` });
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });

  it('cancels an agent loop', async () => {
    await openPage('Chat');
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByRole('combobox', { name: 'Agent', exact: true }).selectOption({ label: 'General assistant' });
    await page.getByRole('checkbox', { name: 'Agent loop' }).check();
    await page.getByLabel('Iterations at most').fill('50');
    await page.getByRole('textbox', { name: 'Message' }).fill('Keep working on it [[iterations forever]]');
    await page.getByRole('button', { name: 'Send' }).click();
    const turn = page.locator('.message.assistant.live').last();
    await turn.getByText('Iteration 1 ended').waitFor({ timeout: 60_000 });
    await turn.getByRole('button', { name: 'Cancel loop' }).click();
    await turn.getByText(/loop stopped \(cancelled\)/).waitFor({ timeout: 60_000 });
    await turn.getByTestId('turn-cost').waitFor({ timeout: 60_000 });
    await page.getByRole('checkbox', { name: 'Agent loop' }).uncheck();
  });

  it('stops an answer mid-stream, keeping what was streamed', async () => {
    // The answer stalls after a few tokens for longer than the test may last: only Stop can end it in time. The fault
    // is the Translator's model's alone: the follow-up suggestions the page asks for after the previous test's turn
    // (the router's model, which the General assistant shares) may reach the simulator after the fault is set, and
    // taking it, they left this answer to stream to its end before Stop could be clicked.
    await platform.simulator.addFault({
      times: 1,
      match: { model: 'gemini-2.5-flash' },
      fault: { stall_after_tokens: 3, stall_ms: 600_000 },
    });
    await openPage('Chat');
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByRole('combobox', { name: 'Agent', exact: true }).selectOption({ label: 'Translator' });
    await page.getByRole('textbox', { name: 'Message' }).fill('Tell me a long story about a lighthouse');
    await page.getByRole('button', { name: 'Send' }).click();
    const turn = page.locator('.message.assistant.live').last();
    // The stream stalls after its third token; the first is drawn at once and the rest a frame later: wait for all three
    // before reading what Stop must keep.
    const streamed = await waitFor(
      'the three tokens before the stall',
      async () => {
        const text =
          (await turn
            .locator('.markdown')
            .textContent({ timeout: 1_000 })
            .catch(() => null)) ?? '';
        return text.trim().split(/\s+/).length >= 3 ? text : null;
      },
      60_000,
    );
    await turn.getByRole('button', { name: 'Stop', exact: true }).click();
    await turn.getByTestId('turn-cost').waitFor({ timeout: 60_000 });
    await expect(turn.getByTestId('turn-cost').textContent()).resolves.toMatch(/^Stopped · /);
    await expect(turn.locator('.markdown').textContent()).resolves.toBe(streamed);
    await expect(turn.getByRole('button', { name: 'Stop', exact: true }).count()).resolves.toBe(0);
    await expectAccessible();
  });

  it('resumes a stream after a reload in the middle of it', async () => {
    // The answer's stream stalls after a few tokens: the page reloads meanwhile.
    await platform.simulator.addFault({ times: 1, fault: { stall_after_tokens: 3, stall_ms: 4000 } });
    await openPage('Chat');
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByRole('combobox', { name: 'Agent', exact: true }).selectOption({ label: 'General assistant' });
    await page.getByRole('textbox', { name: 'Message' }).fill('Tell me about durable execution');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.waitForURL(/\?turn=/);
    await page.locator('.message.assistant.live .markdown').last().waitFor();
    const before = await page.locator('.message.assistant.live .markdown').last().textContent();
    await page.reload();
    const resumed = page.locator('.message.assistant.live').last();
    await resumed.getByTestId('turn-cost').waitFor({ timeout: 60_000 });
    const after = (await resumed.locator('.markdown').textContent())!;
    expect(after.startsWith(before!.trim().split(' ')[0]!)).toBe(true);
    expect(after.length).toBeGreaterThan(before!.length);
    // The finished turn is the history's too: reloading again shows it once, from the history.
    await page.reload();
    const asked = page.locator('.message.user', { hasText: 'Tell me about durable execution' });
    await asked.first().waitFor();
    await expect(asked.count()).resolves.toBe(1);
  });

  it('creates an API key, shows it once, and revokes it', async () => {
    await openPage('Settings');
    await page.getByLabel('Name', { exact: true }).fill('browser key');
    await page.getByRole('button', { name: 'Create a key' }).click();
    const key = (await page.getByTestId('new-key').textContent())!;
    expect(key).toMatch(/^te_/);
    expect((await platform.agents('/auth/me', { key })).status).toBe(200);
    await expectAccessible();
    // Revoking asks first, in place: focus lands on the confirming button.
    await page.getByRole('button', { name: 'Revoke key browser key' }).click();
    await page.getByRole('button', { name: 'Yes, revoke browser key' }).click();
    await page.getByRole('rowheader', { name: 'browser key' }).waitFor({ state: 'detached' });
    await waitFor('the key refused', async () => (await platform.agents('/auth/me', { key })).status === 401);
  });

  it('publishes a site and opens it, and says in the API’s words why a name is refused', async () => {
    await openPage('Sites');
    await page.getByRole('button', { name: 'Publish a page' }).click();
    await page.getByLabel('Name (one DNS label: letters, digits, hyphens)').fill('www');
    await page.getByLabel('Title').fill('Refused');
    await page.getByRole('button', { name: 'Publish', exact: true }).click();
    const refusal = (await page.getByRole('alert').textContent())!;
    expect(refusal).toMatch(/reserved/i);

    await page.getByLabel('Name (one DNS label: letters, digits, hyphens)').fill('hello-web');
    await page.getByLabel('Title').fill('Hello page');
    await page.getByRole('button', { name: 'Publish', exact: true }).click();
    const open = page.getByRole('link', { name: /^Open http:\/\/hello-web\.localhost/ });
    await open.waitFor();
    const [site] = await Promise.all([context.waitForEvent('page'), open.click()]);
    await site.getByRole('heading', { name: 'Hello from Tessera' }).waitFor();
    await site.close();
    await expectAccessible();
  });

  it('creates a schedule with the cron helper and sees it fire', async () => {
    await openPage('Schedules');
    await page.getByRole('combobox', { name: 'Agent', exact: true }).selectOption({ label: 'General assistant' });
    await page.getByLabel('What to ask it each time').fill('Say hello on schedule');
    await page.getByLabel('When').selectOption({ label: 'Custom cron…' });
    await page.getByLabel(/^Cron/).fill('*/2 * * * * *');
    await expect(page.locator('.next-runs li').count()).resolves.toBe(5);
    await expectAccessible();
    await page.getByRole('button', { name: 'Create schedule' }).click();
    await page.getByText('Schedule created.').waitFor();
    const task = page.getByTestId('schedule').first();
    await waitFor(
      'the schedule’s first run',
      async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        return /Last run .*: done/.test((await task.locator('.last-run').textContent()) ?? '');
      },
      90_000,
    );
    await task.getByRole('button', { name: 'Pause' }).click();
    await task.getByText('paused').waitFor();
    await task.getByRole('link', { name: 'See its answer' }).click();
    await page.locator('.message.assistant').first().waitFor();
  });

  it('passes axe-core on every page at phone and desktop widths', async () => {
    const pages = ['Chat', 'Agents', 'Memories', 'Schedules', 'Sites', 'Files', 'Teams', 'Settings'];
    if (screenshots) mkdirSync(screenshots, { recursive: true });
    for (const width of [375, 1280]) {
      await page.setViewportSize({ width, height: width === 375 ? 812 : 800 });
      for (const name of pages) {
        await openPage(name);
        if (name === 'Chat') await openChat(/Tell me about durable execution/);
        await page.getByRole('heading', { level: 1 }).first().waitFor();
        await page.waitForLoadState('networkidle');
        expect(await seriousViolations(page)).toEqual([]);
        // Nothing wider than the screen.
        expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
        if (screenshots) await page.screenshot({ path: `${screenshots}/${name.toLowerCase()}-${width}.png` });
      }
    }
    // The dark theme, chosen in the account menu (the choice is the one thing kept in localStorage).
    await page.getByRole('combobox', { name: 'Theme' }).selectOption('dark');
    for (const width of [375, 1280]) {
      await page.setViewportSize({ width, height: width === 375 ? 812 : 800 });
      for (const name of ['Chat', 'Settings']) {
        await openPage(name);
        if (name === 'Chat') await openChat(/Tell me about durable execution/);
        await page.waitForLoadState('networkidle');
        expect(await seriousViolations(page)).toEqual([]);
        if (screenshots) await page.screenshot({ path: `${screenshots}/${name.toLowerCase()}-${width}-dark.png` });
      }
    }
    await page.getByRole('combobox', { name: 'Theme' }).selectOption('system');
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('logs out', async () => {
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in to Tessera' }).waitFor();
    if (screenshots) await page.screenshot({ path: `${screenshots}/login-1280.png` });
    expect(cspViolations).toEqual([]);
  });
});
