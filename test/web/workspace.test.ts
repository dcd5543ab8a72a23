/**
 * The rest of the web app in a real browser (docs/web-app.md), on a platform of its own: a session renamed, found by
 * a search across sessions, shared (the public page opened), exported and deleted; an image attached to a message
 * (it reaches the model); memories added, searched and deleted (through the confirm step, backed out of once); a
 * built-in agent forked and its model changed; a CSV uploaded, indexed with its progress shown and searched; a team
 * created and a broadcast delivered; the settings' link code, Google status, usage and a checkout refused in the
 * API's words; the dark theme passing axe-core; and the whole of a login and a chat message done with the keyboard
 * alone; and a login with Google (the simulator's consent page, as `npm start` plays it), connected in the settings.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { seriousViolations, startPersonInBrowser, type PersonInBrowser } from '../helpers/browser.ts';
import { csvOf } from '../helpers/documents.ts';
import { englishImage } from '../helpers/media-images.ts';
import type { TestPlatform } from '../helpers/platform.ts';
import { simulatedGoogle } from '../../scripts/lib/simulated-providers.ts';
import type { TestSmtp } from '../helpers/smtp.ts';
import { waitFor } from '../helpers/wait.ts';

let person: PersonInBrowser;
let platform: TestPlatform;
let smtp: TestSmtp;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const email = `workspace-${Date.now()}@example.com`;

beforeAll(async () => {
  // Google's sign-in played by the simulator, as `npm start` does without GOOGLE_CLIENT_ID.
  person = await startPersonInBrowser(email, {
    environment: (simulatorUrl) => ({
      ...simulatedGoogle(simulatorUrl, {}),
      TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64url'),
    }),
  });
  ({ platform, smtp, browser, context, page } = person);
}, 180_000);

afterAll(() => person?.close());

async function openPage(name: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click();
  await page.getByRole('heading', { level: 1 }).first().waitFor();
}

const messageBox = () => page.getByRole('textbox', { name: 'Message' });
const chats = () => page.getByRole('complementary', { name: 'Chats' });

async function send(text: string): Promise<void> {
  await messageBox().fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
  await page.locator('.message.assistant.live').last().getByTestId('turn-cost').waitFor({ timeout: 60_000 });
}

describe('chat sessions', () => {
  it('renames a session, finds it by a search across sessions, shares, exports and deletes it', async () => {
    await send('Tell me about pelicans and their migration');
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByLabel('Title (empty: the first message)').fill('Pelican notes');
    await page.getByRole('button', { name: 'Save title' }).click();
    await chats()
      .getByRole('link', { name: /Pelican notes/ })
      .waitFor();
    await page.getByRole('heading', { name: 'Pelican notes' }).waitFor();

    await send('Something unrelated about teapots');
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByRole('searchbox', { name: 'Search all chats' }).fill('pelicans');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const results = page.getByRole('region', { name: 'Search results' });
    await results
      .locator('mark', { hasText: /pelicans/i })
      .first()
      .waitFor();
    await results.getByRole('link').first().click();
    await page.getByRole('heading', { name: 'Pelican notes' }).waitFor();

    await page.getByRole('button', { name: 'Share / export' }).click();
    await page.getByRole('button', { name: 'Create a share link' }).click();
    const shared = page.locator('.share-link a');
    await shared.waitFor();
    const publicPage = await context.newPage();
    await publicPage.goto((await shared.getAttribute('href'))!);
    await publicPage.getByText('Tell me about pelicans and their migration').first().waitFor();
    await publicPage.close();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Export Markdown' }).click(),
    ]);
    expect(readFileSync((await download.path())!, 'utf8')).toContain('Tell me about pelicans and their migration');
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole('button', { name: 'Usage' }).click();
    await page.getByText(/\d+ turns · /).waitFor();
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('button', { name: 'Delete for good' }).click();
    await page.getByRole('heading', { name: 'New chat' }).waitFor();
    await chats()
      .getByRole('link', { name: /Pelican notes/ })
      .waitFor({ state: 'detached' });
  });

  it('attaches an image that reaches the model', async () => {
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByRole('combobox', { name: 'Agent', exact: true }).selectOption({ label: 'General assistant' });
    await page.getByLabel('Attach images or files').setInputFiles({
      name: 'sign.png',
      mimeType: 'image/png',
      buffer: await englishImage('OPEN'),
    });
    await messageBox().fill('What does this sign say?');
    await page.getByRole('button', { name: 'Send' }).click();
    const answer = page.locator('.message.assistant.live').last();
    await answer.getByTestId('turn-cost').waitFor({ timeout: 60_000 });
    await expect(answer.locator('.markdown').textContent()).resolves.toContain('[saw 1 image(s)]');
    await page.getByText('Attached: sign.png').waitFor();
  });
});

describe('the other pages', () => {
  it('adds, searches and deletes memories', async () => {
    await openPage('Memories');
    await page.getByLabel('Something to remember').fill('I prefer green tea in the morning');
    await page.getByRole('button', { name: 'Add memory' }).click();
    await page.getByText('I prefer green tea in the morning').waitFor();
    await page.getByLabel('Something to remember').fill('My cat is called Miso');
    await page.getByRole('button', { name: 'Add memory' }).click();
    await page.getByText('My cat is called Miso').waitFor();
    await page.getByRole('searchbox', { name: 'Search memories' }).fill('tea');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByText('My cat is called Miso').waitFor({ state: 'detached' });
    // Deleting asks first, in place; Escape backs out with the focus on Delete again, and Yes deletes.
    // (The focus is waited for: it moves once the step has rendered. Read through the DevTools protocol, as the CSP
    // allows.)
    const focused = (label: string) =>
      waitFor(
        `the focus on ${label}`,
        async () =>
          (await page.evaluate(
            'document.activeElement && (document.activeElement.ariaLabel || document.activeElement.textContent)',
          )) === label,
      );
    const remove = page.getByRole('button', { name: /^Delete memory: I prefer green tea/ });
    await remove.click();
    await focused('Yes, delete this memory');
    expect(await seriousViolations(page)).toEqual([]);
    await page.keyboard.press('Escape');
    await focused('Delete memory: I prefer green tea in the morning');
    await remove.click();
    await focused('Yes, delete this memory');
    await page.keyboard.press('Enter');
    await page.getByText('No memory matches.').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('forks a built-in agent and changes an agent’s model', async () => {
    await openPage('Agents');
    const writer = page
      .getByRole('listitem')
      .filter({ has: page.getByRole('heading', { name: 'Writer', exact: true }) });
    await writer.getByRole('button', { name: 'Fork' }).click();
    await page.getByText('Forked Writer into a custom agent you can edit.').waitFor();
    const copies = page
      .getByRole('listitem')
      .filter({ has: page.getByText('forked from writer') })
      .filter({ has: page.getByText('custom', { exact: true }) });
    await copies.first().waitFor();
    await expect(copies.count()).resolves.toBe(1);

    const coder = page.getByRole('listitem').filter({ has: page.getByRole('heading', { name: 'Coder', exact: true }) });
    const select = coder.getByRole('combobox', { name: 'Model' });
    const current = await select.inputValue();
    const other = (await select.locator('option').allTextContents()).find((name) => name !== current)!;
    await select.selectOption(other);
    await coder.getByRole('button', { name: 'Change model' }).click();
    await page.getByText(`Coder now answers with ${other}.`).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('uploads a CSV, shows its indexing, and finds a row by meaning', async () => {
    await openPage('Files');
    const rows = [
      ['city', 'country', 'landmark'],
      ...Array.from({ length: 40 }, (_, index) => [`City ${index}`, 'Nowhere', `Tower ${index}`]),
    ];
    rows.push(['Kyoto', 'Japan', 'Kinkaku-ji golden pavilion temple']);
    await page.getByLabel('File to upload (PDF, Excel, CSV, image)').setInputFiles({
      name: 'places.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from(csvOf(rows)),
    });
    await page.getByRole('button', { name: 'Upload and index' }).click();
    await page.getByText('Uploaded places.csv; indexing it for search.').waitFor();
    const file = page.getByTestId('file').filter({ hasText: 'places.csv' });
    await file.getByText(/Indexed: \d+ passages, searchable\./).waitFor({ timeout: 90_000 });
    await page.getByRole('searchbox', { name: 'Search your files' }).fill('golden pavilion temple in Japan');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page
      .getByRole('list', { name: 'Search results' })
      .getByText(/Kinkaku-ji/)
      .first()
      .waitFor();
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('creates a team and sees a broadcast delivered', async () => {
    await openPage('Teams');
    await page.getByLabel('New team').fill('Birdwatchers');
    await page.getByRole('button', { name: 'Create team' }).click();
    await page.getByRole('button', { name: 'Open Birdwatchers' }).click();
    await page.getByLabel('Broadcast to every member').fill('Meeting at dawn');
    await page.getByRole('button', { name: 'Broadcast', exact: true }).click();
    await page.getByText('Broadcast delivered').waitFor({ timeout: 60_000 });
    await page.getByText(`${email}: delivered`).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('shows a link code, the Google connection, usage and plans, and says why a checkout cannot start', async () => {
    await openPage('Settings');
    await page.getByRole('button', { name: 'Get a link code' }).click();
    await expect(page.locator('.link-code').textContent()).resolves.toMatch(/^\d{6}$/);
    await page.getByText(/Not connected: the workspace agents/).waitFor();
    await page.getByText(/\d+ credits · \d+ turns/).waitFor();
    const plans = page.getByRole('list', { name: 'Plans' });
    await plans.getByRole('heading', { name: 'business' }).waitFor();
    const upgrade = plans.getByRole('button', { name: /^Upgrade to / }).first();
    if (await upgrade.count()) {
      await upgrade.click();
      const alert = (await page.getByRole('alert').first().textContent())!;
      expect(alert).toMatch(/^Checkout could not start: \S/);
      expect(alert).not.toMatch(/: Error$/);
    }
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('passes axe-core in the dark theme', async () => {
    await page.getByRole('combobox', { name: 'Theme' }).selectOption('dark');
    expect(await page.evaluate('document.documentElement.dataset.theme')).toBe('dark');
    for (const name of ['Chat', 'Settings', 'Schedules']) {
      await openPage(name);
      await page.waitForLoadState('networkidle');
      expect(await seriousViolations(page)).toEqual([]);
    }
    await page.getByRole('combobox', { name: 'Theme' }).selectOption('system');
  });
});

describe('with the keyboard alone', () => {
  it('logs in and sends a message', async () => {
    const keyboardContext = await browser.newContext({ viewport: { width: 375, height: 812 } });
    const keyboardPage = await keyboardContext.newPage();
    const keyboardEmail = `keyboard-${Date.now()}@example.com`;
    await keyboardPage.goto(platform.agentsUrl);
    await keyboardPage.getByRole('heading', { name: 'Log in to Tessera' }).waitFor();
    await keyboardPage.keyboard.press('Tab');
    expect(await keyboardPage.evaluate('document.activeElement.id')).toBe('login-email');
    await keyboardPage.keyboard.type(keyboardEmail);
    await keyboardPage.keyboard.press('Enter');
    await keyboardPage.getByText(`We sent a login link to ${keyboardEmail}`).waitFor();
    const mail = await smtp.nextMail(keyboardEmail, 15_000);
    await keyboardPage.goto(/http:\/\/127\.0\.0\.1:\d+\/auth\/verify\?token=[A-Za-z0-9_-]+/.exec(mail.text)![0]);
    // At 375 px the navigation sits behind the Menu button.
    await keyboardPage.getByRole('button', { name: 'Menu' }).waitFor();
    // Tab through the page until the message box has the focus, then type and press Enter.
    for (let presses = 0; presses < 40; presses++) {
      await keyboardPage.keyboard.press('Tab');
      if ((await keyboardPage.evaluate('document.activeElement.id')) === 'composer-message') break;
    }
    expect(await keyboardPage.evaluate('document.activeElement.id')).toBe('composer-message');
    await keyboardPage.keyboard.type('Hello from the keyboard');
    await keyboardPage.keyboard.press('Enter');
    await keyboardPage.locator('.message.assistant.live').last().getByTestId('turn-cost').waitFor({ timeout: 60_000 });
    // The menu opens from the keyboard too, and its links are reachable.
    await keyboardPage.getByRole('button', { name: 'Menu' }).focus();
    await keyboardPage.keyboard.press('Enter');
    await keyboardPage.getByRole('link', { name: 'Settings' }).focus();
    await keyboardPage.keyboard.press('Enter');
    await keyboardPage.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
    await keyboardContext.close();
  });
});

describe('with Google', () => {
  it('logs in through Google’s consent page and shows the connection in the settings', async () => {
    const googleContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const googlePage = await googleContext.newPage();
    const googleEmail = `google-${Date.now()}@example.com`;
    await googlePage.goto(platform.agentsUrl);
    await googlePage.getByRole('link', { name: 'Log in with Google' }).click();
    await googlePage.getByRole('heading', { name: 'Sign in with Google' }).waitFor();
    await googlePage.getByLabel('E-mail', { exact: true }).fill(googleEmail);
    await googlePage.getByRole('button', { name: 'Allow' }).click();
    await googlePage.getByRole('navigation', { name: 'Main' }).waitFor();
    await googlePage.getByText(googleEmail).waitFor();
    await googlePage.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
    await googlePage.getByText(`Connected as ${googleEmail}.`).waitFor();
    await googlePage.getByText(/Workspace agents enabled: .*mail/).waitFor();
    await googleContext.close();
  });
});
