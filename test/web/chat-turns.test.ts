/**
 * What a person does with a chat's turns, in a real browser (docs/web-app.md, "The transcript"), on a platform of its
 * own: a new chat is in the chat list while its first turn waits for an approval; an answer is copied, regenerated
 * (the first answer paged back to), asked of another agent, and its message edited into a new branch; the follow-up
 * suggestions under the last answer send on click; a reopened chat shows each answer's agent by name with its
 * confidence and its cost, as the live one did; axe-core finds nothing serious at 375 and 1280 px in either theme. A
 * message's image reaches the model again when its answer is regenerated, and a reopened chat names it as the live one
 * did.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { seriousViolations, startPersonInBrowser, type PersonInBrowser } from '../helpers/browser.ts';
import { englishImage } from '../helpers/media-images.ts';
import { waitFor } from '../helpers/wait.ts';

let person: PersonInBrowser;
let page: Page;
const email = `turns-${Date.now()}@example.com`;
const screenshots = process.env.WEB_SCREENSHOTS;

beforeAll(async () => {
  person = await startPersonInBrowser(email, { clipboard: true });
  ({ page } = person);
}, 180_000);

afterAll(() => person?.close());

const messageBox = () => page.getByRole('textbox', { name: 'Message' });
const chats = () => page.getByRole('complementary', { name: 'Chats' });
const turnGroups = () => page.locator('.turn-group');
const costs = () => page.getByTestId('turn-cost');

async function newChat(agent: string): Promise<void> {
  await page.getByRole('button', { name: 'New chat' }).click();
  await page.getByRole('heading', { name: 'New chat' }).waitFor();
  await page.getByRole('combobox', { name: 'Agent', exact: true }).selectOption({ label: agent });
}

/** Sends a message and waits until its turn's cost line shows (the turn ended and the history was read again). */
async function send(text: string): Promise<void> {
  const before = await costs().count();
  await messageBox().fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
  await expectCount('costs', before + 1);
}

const selectors = { costs: '[data-testid="turn-cost"]', turns: '.turn-group' };

/** Waits until the page shows `count` of these. */
async function expectCount(what: keyof typeof selectors, count: number): Promise<void> {
  await waitFor(`${count} ${what}`, async () => (await page.locator(selectors[what]).count()) === count, 60_000);
}

async function expectAccessible(): Promise<void> {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of [1280, 375]) {
      await page.setViewportSize({ width, height: 800 });
      expect({ scheme, width, violations: await seriousViolations(page) }).toEqual({ scheme, width, violations: [] });
      expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 800 });
}

describe('a chat’s turns', () => {
  it('lists a new chat while its first turn waits for an approval', async () => {
    // A custom agent whose publish_site call waits for the person's approval (made through the API, as the page does).
    const created = await page.evaluate(async () => {
      const response = await fetch('/agents/custom', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'Publisher',
          description: 'Publishes small web pages',
          system_prompt: 'You publish web pages for the user.',
          tools: ['publish_site'],
        }),
      });
      return response.status;
    });
    expect(created).toBe(201);
    await page.reload();
    await newChat('Publisher');
    const html = '<p>waiting page</p>';
    await messageBox().fill(
      `Publish a page while I think [[call publish_site ${JSON.stringify({ subdomain: 'waiting-page', title: 'W', html })}]]`,
    );
    await page.getByRole('button', { name: 'Send' }).click();
    const approval = page.getByRole('region', { name: 'Approval for publish_site' }).last();
    await approval.getByRole('button', { name: 'Reject' }).waitFor({ timeout: 60_000 });
    // Listed now, while the answer waits, under its first message.
    await chats().getByText('Publish a page while I think').waitFor();
    await approval.getByRole('button', { name: 'Reject' }).click();
    await page.locator('.message.assistant.live').last().getByTestId('turn-cost').waitFor({ timeout: 60_000 });
  }, 120_000);

  it('copies, regenerates, pages back, asks another agent, edits into a branch and follows a suggestion', async () => {
    await newChat('General assistant');
    await send('Name a fruit that is yellow');
    await send('Name a vegetable that is green');
    const last = () => turnGroups().last();

    // Copy the answer.
    const answerText = (await last().locator('.message.assistant .markdown').innerText()).trim();
    await last().getByRole('button', { name: 'Copy answer' }).click();
    await last().getByRole('button', { name: 'Copied' }).waitFor();
    expect((await page.evaluate<string>('navigator.clipboard.readText()')).trim()).toBe(answerText);

    // Follow-ups under the last answer.
    const suggestions = page.getByRole('region', { name: 'Suggested follow-ups' });
    await suggestions.getByRole('button').first().waitFor({ timeout: 60_000 });

    // Regenerate: a second answer, the first one reachable.
    await last().getByRole('button', { name: 'Regenerate' }).click();
    await last().getByText('2 / 2').waitFor({ timeout: 60_000 });
    await expectCount('turns', 2);
    await last().getByRole('button', { name: 'Previous answer' }).click();
    await last().getByText('1 / 2').waitFor();
    await last().getByRole('button', { name: 'Next answer' }).click();
    await last().getByText('2 / 2').waitFor();

    // The same message asked of another agent: the writer answers, as a third alternative.
    await last().getByRole('combobox', { name: 'Ask another agent' }).selectOption({ label: 'Writer' });
    await last().getByText('3 / 3').waitFor({ timeout: 60_000 });
    await last().locator('.agent-name', { hasText: 'Writer' }).waitFor();

    // Edit the first message: a new branch from there, the old one kept.
    const first = turnGroups().first();
    await first.getByRole('button', { name: 'Edit' }).click();
    await first.getByRole('textbox', { name: /Edit your message/ }).fill('Name a fruit that is red');
    await first.getByRole('button', { name: 'Send edited message' }).click();
    await turnGroups().first().getByText('2 / 2').waitFor({ timeout: 60_000 });
    await expectCount('turns', 1);
    expect(await page.locator('.user-text', { hasText: 'Name a vegetable that is green' }).count()).toBe(0);
    await turnGroups().first().locator('.user-text', { hasText: 'Name a fruit that is red' }).waitFor();
    await turnGroups().first().getByRole('button', { name: 'Previous answer' }).click();
    await page.locator('.user-text', { hasText: 'Name a vegetable that is green' }).waitFor();
    await expectCount('turns', 2);

    // A suggestion sends on click.
    await turnGroups().last().getByRole('button', { name: 'Regenerate' }).click();
    const suggestion = suggestions.getByRole('button').first();
    await suggestion.waitFor({ timeout: 60_000 });
    const text = (await suggestion.innerText()).trim();
    await suggestion.click();
    await turnGroups().last().locator('.user-text', { hasText: text }).waitFor({ timeout: 60_000 });
    await expectCount('turns', 3);
    await turnGroups().last().getByTestId('turn-cost').waitFor({ timeout: 60_000 });
    await expectAccessible();
  }, 240_000);

  it('shows a reopened chat as the live one: agents by name with their confidence, and each answer’s cost', async () => {
    const liveNames = await page.locator('.turn-group .agent-name').allInnerTexts();
    const liveCosts = await costs().count();
    await page.reload();
    await expectCount('turns', 3);
    expect(await page.locator('.turn-group .agent-name').allInnerTexts()).toEqual(liveNames);
    expect(await page.locator('.turn-group .badge', { hasText: /% confident/ }).count()).toBe(3);
    expect(await costs().count()).toBe(liveCosts);
    expect(await page.getByText(/^general$/).count()).toBe(0);
    if (screenshots) {
      mkdirSync(screenshots, { recursive: true });
      await page.screenshot({ path: `${screenshots}/chat-turns-1280.png` });
      await page.setViewportSize({ width: 375, height: 812 });
      await page.screenshot({ path: `${screenshots}/chat-turns-375.png` });
      await page.setViewportSize({ width: 1280, height: 800 });
    }
    await expectAccessible();
  }, 120_000);

  it('keeps a message’s image when its answer is regenerated, and a reopened chat names it', async () => {
    await newChat('General assistant');
    await page.getByLabel('Attach images or files').setInputFiles({
      name: 'sign.png',
      mimeType: 'image/png',
      buffer: await englishImage('OPEN'),
    });
    await send('What does this sign say?');
    const last = () => turnGroups().last();
    await last().getByText('Attached: sign.png').waitFor();
    await expect(last().locator('.message.assistant .markdown').innerText()).resolves.toContain('[saw 1 image(s)]');

    // Regenerate sends the text only; the service attaches the image again, and the page keeps naming it.
    await last().getByRole('button', { name: 'Regenerate' }).click();
    await last().getByText('2 / 2').waitFor({ timeout: 60_000 });
    await expect(last().locator('.message.assistant .markdown').innerText()).resolves.toContain('[saw 1 image(s)]');
    expect(await last().getByText('Attached: sign.png').count()).toBe(1);

    // Reopened: the history names the attachment under the message, once.
    await page.reload();
    await expectCount('turns', 1);
    await last().locator('.message.user').getByText('Attached: sign.png').waitFor();
    expect(await last().getByText('Attached: sign.png').count()).toBe(1);
    await expect(last().locator('.message.assistant .markdown').innerText()).resolves.toContain('[saw 1 image(s)]');
  }, 120_000);
});
