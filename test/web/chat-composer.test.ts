/**
 * The chat's composer, code blocks and narrow header in a real browser (docs/web-app.md), on a platform of its own:
 * a file dropped on the composer is shown before it is sent and reaches the model; several files chosen with the file
 * input and dropped are each shown with a Remove button, one removed, the rest sent (the model sees the images, the
 * reopened chat names them); a pasted image is previewed (a `blob:` image the CSP allows) and removed; a file the
 * service would refuse, or a fifth attachment, is refused in the page; a code block in
 * an answer is copied to the clipboard by its Copy code button; at 375 px the chat's actions sit behind Chat actions
 * (Escape closes them, the keyboard reaches them) and nothing scrolls sideways; axe-core finds no serious violation
 * at 375 and 1280 px in either theme, with two attachments and the open actions on screen. With WEB_SCREENSHOTS=<folder>,
 * those four views are photographed into it (docs/web/chat-composer-*.png).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync } from 'node:fs';
import type { JSHandle, Page } from 'playwright-core';
import { seriousViolations, startPersonInBrowser, type PersonInBrowser } from '../helpers/browser.ts';
import { csvOf } from '../helpers/documents.ts';
import { englishImage } from '../helpers/media-images.ts';

let person: PersonInBrowser;
let page: Page;
let cspViolations: string[];
const email = `composer-${Date.now()}@example.com`;
// With WEB_SCREENSHOTS=<folder>, the chat with an attachment and a code block is photographed into it (docs/web/).
const screenshots = process.env.WEB_SCREENSHOTS;

beforeAll(async () => {
  // A small file limit, so the page's refusal of a file over it is cheap to show.
  person = await startPersonInBrowser(email, {
    environment: () => ({ UPLOAD_MAX_BYTES: String(100 * 1024) }),
    clipboard: true,
  });
  ({ page, cspViolations } = person);
}, 180_000);

afterAll(() => person?.close());

const composer = () => page.getByRole('form', { name: 'Send a message' });
const messageBox = () => page.getByRole('textbox', { name: 'Message' });
/** The composer's list of attachments (named with their count: "Attachments (2 of at most 4)"). */
const preview = () => page.getByRole('list', { name: /^Attachments \(/ });
const attached = (name: string) => preview().getByRole('listitem', { name: `Attachment ${name}`, exact: true });
const lastAnswer = () => page.locator('.message.assistant.live').last();

async function newChat(): Promise<void> {
  await page.getByRole('button', { name: 'New chat' }).click();
  await page.getByRole('heading', { name: 'New chat' }).waitFor();
  await page.getByRole('combobox', { name: 'Agent', exact: true }).selectOption({ label: 'General assistant' });
}

/** Sends a message and waits for its answer to end (one more cost line). */
async function send(text: string): Promise<void> {
  const answered = await page.getByTestId('turn-cost').count();
  await messageBox().fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
  await page.getByTestId('turn-cost').nth(answered).waitFor({ timeout: 60_000 });
}

/**
 * A DataTransfer holding files, made in the page from their bytes, as a drag from the desktop or a paste from the
 * clipboard carries them; also kept as the page's `testTransfer`. (The page's code is a string: this file is typed for
 * Node, without the DOM's names.)
 */
function dataTransfer(...files: Array<{ name: string; type: string; bytes: Buffer }>): Promise<JSHandle> {
  const described = files.map(({ name, type, bytes }) => ({ name, type, base64: bytes.toString('base64') }));
  return page.evaluateHandle(`(() => {
    const transfer = new DataTransfer();
    for (const { name, type, base64 } of ${JSON.stringify(described)}) {
      const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
      transfer.items.add(new File([bytes], name, { type }));
    }
    globalThis.testTransfer = transfer;
    return transfer;
  })()`);
}

/** Drags files over the composer, checks that the drop zone shows, and drops them. */
async function drop(transfer: JSHandle): Promise<void> {
  await composer().dispatchEvent('dragenter', { dataTransfer: transfer });
  await composer().dispatchEvent('dragover', { dataTransfer: transfer });
  await page.getByText('Drop the files to attach them').waitFor();
  await composer().dispatchEvent('drop', { dataTransfer: transfer });
  await page.getByText('Drop the files to attach them').waitFor({ state: 'detached' });
}

/** Pastes the files of the last dataTransfer() into the message box, as Ctrl+V does. */
async function paste(): Promise<void> {
  await page.evaluate(
    `document.getElementById('composer-message').dispatchEvent(
      new ClipboardEvent('paste', { clipboardData: globalThis.testTransfer, bubbles: true, cancelable: true }),
    )`,
  );
}

const birds = csvOf([
  ['bird', 'wingspan_cm'],
  ['pelican', 300],
  ['heron', 180],
]);

describe('attachments', () => {
  it('takes a file dropped on the composer, shows it, and the model gets it', async () => {
    await newChat();
    await drop(await dataTransfer({ name: 'birds.csv', type: 'text/csv', bytes: Buffer.from(birds) }));
    await preview().getByText('birds.csv', { exact: true }).waitFor();
    await expect(preview().textContent()).resolves.toContain(`CSV file · ${Buffer.byteLength(birds)} B`);

    await send('Widest?');
    await page.getByText('Attached: birds.csv').waitFor();
    await preview().waitFor({ state: 'detached' });
    // The model read the message with the file named (the simulator quotes the message's first 40 characters); the
    // rest of the line is the uploaded file's id, for the agent's read_upload and rag_search tools.
    await expect(lastAnswer().locator('.markdown').textContent()).resolves.toContain('(Attached file: birds.csv, file');
  });

  it('refuses in the page what the service would refuse, sending nothing', async () => {
    await drop(await dataTransfer({ name: 'notes.txt', type: 'text/plain', bytes: Buffer.from('just some words') }));
    await page.getByText(/^Not attached: notes\.txt is not a kind of file the service reads/).waitFor();
    const five = ['one', 'two', 'three', 'four', 'five'].map((name) => ({
      name: `${name}.csv`,
      type: 'text/csv',
      bytes: Buffer.from(birds),
    }));
    await drop(await dataTransfer(...five));
    await page.getByText(/^Not attached: a message carries at most 4 files .*attach 4 or fewer$/).waitFor();
    const big = csvOf([['n', 'square'], ...Array.from({ length: 12_000 }, (_, n) => [n, n * n])]);
    await drop(await dataTransfer({ name: 'big.csv', type: 'text/csv', bytes: Buffer.from(big) }));
    await page.getByText(/^Not attached: big\.csv \([\d.]+ KB\) is larger than the limit of 100\.0 KB$/).waitFor();
    await expect(preview().count()).resolves.toBe(0);
  });

  it('takes several files from the file input and a drop, each removable, and sends the rest', async () => {
    await newChat();
    const images = await Promise.all(
      ['ALPHA', 'BRAVO', 'CHARLIE'].map(async (text) => ({
        name: `${text.toLowerCase()}.png`,
        mimeType: 'image/png',
        buffer: await englishImage(text),
      })),
    );
    // Attach's file input takes several files at once (`multiple`).
    await page.getByLabel('Attach images or files').setInputFiles(images);
    for (const name of ['alpha.png', 'bravo.png', 'charlie.png']) {
      await attached(name)
        .getByRole('img', { name: `Preview of ${name}` })
        .waitFor();
    }
    await attached('bravo.png').getByRole('button', { name: 'Remove attachment bravo.png' }).click();
    await attached('bravo.png').waitFor({ state: 'detached' });
    await drop(await dataTransfer({ name: 'birds.csv', type: 'text/csv', bytes: Buffer.from(birds) }));
    await attached('birds.csv').waitFor();
    await expect(preview().getByRole('listitem').allTextContents()).resolves.toEqual([
      expect.stringContaining('alpha.png'),
      expect.stringContaining('charlie.png'),
      expect.stringContaining('birds.csv'),
    ]);
    await expect(preview().getAttribute('aria-label')).resolves.toBe('Attachments (3 of at most 4)');
    // Two more would make five: refused, the three kept.
    await drop(
      await dataTransfer(
        { name: 'one.csv', type: 'text/csv', bytes: Buffer.from(birds) },
        { name: 'two.csv', type: 'text/csv', bytes: Buffer.from(birds) },
      ),
    );
    await page.getByText(/^Not attached: a message carries at most 4 files .*3 attached already/).waitFor();
    await expect(preview().getByRole('listitem').count()).resolves.toBe(3);

    // Short, so the file's note is within what the simulator quotes (the message's first 40 characters).
    await send('Which?');
    await page.getByText('Attached: alpha.png, charlie.png, birds.csv').waitFor();
    await preview().waitFor({ state: 'detached' });
    // The model saw both images, and read the file's note.
    const answer = (await lastAnswer().locator('.markdown').textContent())!;
    expect(answer).toContain('[saw 2 image(s)]');
    expect(answer).toContain('(Attached file: birds.csv, file');
    // Reopened, the message names its images (the history's attachments; the file is named in its text).
    await page.reload();
    await page.getByText('Attached: alpha.png, charlie.png', { exact: true }).waitFor();
  });

  it('previews a pasted image and removes it', async () => {
    await dataTransfer({ name: 'screenshot.png', type: 'image/png', bytes: await englishImage('PASTED') });
    await paste();
    const image = preview().getByRole('img', { name: 'Preview of screenshot.png' });
    await image.waitFor();
    await expect(preview().getByRole('listitem').count()).resolves.toBe(1);
    const source = (await image.getAttribute('src'))!;
    expect(source).toMatch(/^blob:/);
    // The image is drawn (the CSP allows blob: images), and the paste put no text in the message box.
    await page.waitForFunction(`document.querySelector('.attachment-preview img').naturalWidth > 0`);
    await expect(messageBox().inputValue()).resolves.toBe('');
    await expect(preview().textContent()).resolves.toContain('PNG image');

    await preview().getByRole('button', { name: 'Remove attachment screenshot.png' }).click();
    await preview().waitFor({ state: 'detached' });
    // Its blob: URL went with it: an image of it no longer loads.
    const loads = `new Promise((resolve) => {
      const image = new Image();
      image.onload = () => resolve('loads');
      image.onerror = () => resolve('revoked');
      image.src = ${JSON.stringify(source)};
    })`;
    await expect(page.evaluate(loads)).resolves.toBe('revoked');
  });

  it('sends a pasted image to the model', async () => {
    await dataTransfer({ name: 'sign.png', type: 'image/png', bytes: await englishImage('OPEN') });
    await paste();
    await preview().getByRole('img', { name: 'Preview of sign.png' }).waitFor();
    await send('What does this sign say?');
    await expect(lastAnswer().locator('.markdown').textContent()).resolves.toContain('[saw 1 image(s)]');
  });
});

describe('an answer with code', () => {
  it('copies a code block with its Copy code button', async () => {
    await newChat();
    // The simulator answers `[[say "…"]]` with exactly that text (JSON-decoded).
    await send('Show me [[say "Here is the code:\\n\\n```python\\nprint(\\"hello\\")\\n```\\n\\nRun it."]]');
    const answer = lastAnswer();
    await answer.locator('pre.code').waitFor();
    await expect(answer.locator('.code-bar').textContent()).resolves.toContain('python');
    await answer.getByRole('button', { name: 'Copy code' }).click();
    await answer.getByRole('button', { name: 'Copied' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Copied' }).waitFor();
    await expect(page.evaluate('navigator.clipboard.readText()')).resolves.toBe('print("hello")\n');
    // The same answer reopened from the history has its button too.
    await page.reload();
    await page.locator('.message.assistant pre.code').waitFor();
    await expect(page.getByRole('button', { name: 'Copy code' }).count()).resolves.toBe(1);
  });
});

describe('narrow screens', () => {
  it('keeps the chat actions behind a menu at 375 px, with nothing wider than the screen', async () => {
    await page.setViewportSize({ width: 375, height: 812 });
    await page.locator('pre.code').waitFor();
    expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
    const header = `document.querySelector('.conversation-header')`;
    expect(await page.evaluate(`${header}.scrollWidth <= ${header}.clientWidth`)).toBe(true);
    const toggle = page.getByRole('button', { name: 'Chat actions' });
    await expect(toggle.getAttribute('aria-expanded')).resolves.toBe('false');
    await expect(page.getByRole('button', { name: 'Delete', exact: true }).isVisible()).resolves.toBe(false);

    await toggle.click();
    await expect(toggle.getAttribute('aria-expanded')).resolves.toBe('true');
    const remove = page.getByRole('button', { name: 'Delete', exact: true });
    await remove.waitFor();
    const box = (await remove.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(375);
    expect(box.y + box.height).toBeLessThanOrEqual(812);
    expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
    await page.keyboard.press('Escape');
    await remove.waitFor({ state: 'hidden' });
    await expect(toggle.getAttribute('aria-expanded')).resolves.toBe('false');
    expect(await page.evaluate(`document.activeElement.textContent`)).toBe('Chat actions');

    // By keyboard: Enter opens the list, Tab walks it, Enter on Delete opens its panel and closes the list.
    await page.keyboard.press('Enter');
    for (const name of ['Rename', 'Share / export', 'Usage', 'Delete']) {
      await page.keyboard.press('Tab');
      expect(await page.evaluate(`document.activeElement.textContent`)).toBe(name);
    }
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Delete for good' }).waitFor();
    await expect(toggle.getAttribute('aria-expanded')).resolves.toBe('false');
    await page.getByRole('button', { name: 'Keep it' }).click();
    await page.getByRole('button', { name: 'Delete for good' }).waitFor({ state: 'detached' });

    // Wide again: the actions are a row, and the menu's button is gone.
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByRole('button', { name: 'Delete', exact: true }).waitFor();
    await expect(toggle.isVisible()).resolves.toBe(false);
  });

  it('passes axe-core at 375 and 1280 px in both themes, with two attachments and the actions open', async () => {
    await drop(
      await dataTransfer(
        { name: 'birds.csv', type: 'text/csv', bytes: Buffer.from(birds) },
        { name: 'sign.png', type: 'image/png', bytes: await englishImage('OPEN') },
      ),
    );
    await attached('sign.png').getByRole('img', { name: 'Preview of sign.png' }).waitFor();
    for (const theme of ['light', 'dark'] as const) {
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.getByRole('combobox', { name: 'Theme' }).selectOption(theme);
      for (const width of [375, 1280]) {
        await page.setViewportSize({ width, height: width === 375 ? 812 : 800 });
        if (width === 375) await page.getByRole('button', { name: 'Chat actions' }).click();
        await page.locator('pre.code').waitFor();
        expect(await seriousViolations(page)).toEqual([]);
        expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
        if (screenshots) {
          mkdirSync(screenshots, { recursive: true });
          await page.screenshot({
            path: `${screenshots}/chat-composer-${width}${theme === 'dark' ? '-dark' : ''}.png`,
          });
        }
        if (width === 375) await page.keyboard.press('Escape');
      }
    }
    await page.getByRole('combobox', { name: 'Theme' }).selectOption('system');
    for (const name of ['birds.csv', 'sign.png']) {
      await preview()
        .getByRole('button', { name: `Remove attachment ${name}` })
        .click();
    }
    await preview().waitFor({ state: 'detached' });
    expect(cspViolations).toEqual([]);
  });
});
