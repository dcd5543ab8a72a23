/**
 * A model's answer as Markdown, safely: markdown-it with `html: false` never passes raw HTML through (a `<script>`
 * in the text stays text), its link check drops `javascript:` and other unsafe URLs, code blocks are highlighted by
 * highlight.js (which escapes what it colours), and DOMPurify sanitises the result once more before it becomes DOM:
 * the answer is untrusted, and the defence should not rest on one library. Links open in a new tab without the
 * opener.
 *
 * A streamed answer grows by a few characters a frame: it is rendered as blocks (splitBlocks), each block's HTML
 * computed once, so a frame re-parses only the last, growing block, whatever the answer's length. Each code block
 * gets a Copy code button, added beside the sanitised HTML (DOMPurify forbids buttons inside it).
 */
import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import markdownLanguage from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import MarkdownIt from 'markdown-it';
import { useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';

for (const [name, language] of Object.entries({
  bash,
  css,
  diff,
  go,
  java,
  javascript,
  json,
  markdown: markdownLanguage,
  python,
  rust,
  sql,
  typescript,
  xml,
  yaml,
})) {
  hljs.registerLanguage(name, language);
}

const markdown: InstanceType<typeof MarkdownIt> = new MarkdownIt({
  html: false,
  linkify: true,
  breaks: false,
  highlight(code, language) {
    const known = language && hljs.getLanguage(language) ? language : null;
    const highlighted = known
      ? hljs.highlight(code, { language: known, ignoreIllegals: true }).value
      : markdown.utils.escapeHtml(code);
    return `<pre class="code"><code class="hljs${known ? ` language-${known}` : ''}">${highlighted}</code></pre>`;
  },
});

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
});

// Set once: a configuration passed with each call is parsed (its tag and attribute sets built) on every call.
DOMPurify.setConfig({
  USE_PROFILES: { html: true },
  FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'img'],
  FORBID_ATTR: ['style'],
  ADD_ATTR: ['target'],
});

/**
 * A paragraph of plain words: it starts with a letter (no list, heading, quote or indented code), has no character
 * Markdown or HTML gives a meaning to, no full stop inside a word (linkify would take `example.com` for a link) and no
 * line break. markdown-it renders it as `<p>` around the escaped, trimmed text, which this pattern lets us write
 * directly: a streaming answer's first words (and many later blocks) skip the parser and the sanitiser.
 */
const plainProse = /^\p{L}[\p{L}\p{N} ,;:'"?!()]*(?:\.(?= |$)[\p{L}\p{N} ,;:'"?!()]*)*$/u;

/** Markdown to sanitised HTML. */
export function renderMarkdown(text: string): string {
  if (plainProse.test(text)) return `<p>${markdown.utils.escapeHtml(text.trimEnd())}</p>\n`;
  return DOMPurify.sanitize(markdown.render(text));
}

/**
 * A Markdown text cut into blocks that render alone exactly as they render together: `sources` joined are the text.
 * `stable` is the length of the text the blocks before the last one cover: they cannot change as the text grows.
 */
export interface MarkdownBlocks {
  text: string;
  sources: string[];
  stable: number;
}

// A fence opens on a line of three or more backticks or tildes, indented by at most three spaces (a backtick fence's
// info string has no backtick), and closes on a line of at least as many of the same character.
const fenceOpening = /^ {0,3}(`{3,}(?=[^`]*$)|~{3,})/;
const listItem = /^([-*+]|\d{1,9}[.)])(\s|$)/;
// A link reference definition (`[name]: url`) serves the whole text: an answer with one renders as one block.
const referenceDefinition = /^ {0,3}\[[^\]\n]+\]:/m;

/**
 * Cuts `text` into blocks, starting from `previous` (the same text shorter, as a stream grows it): only the part after
 * its stable blocks is scanned again. A block ends
 * - before a blank line's next line that starts at the margin and is no list item (a paragraph, a heading, a quote, a
 *   table …: nothing of CommonMark but lists, indented content and reference definitions reaches across a blank line);
 * - before a code fence that starts at the margin, and after the line that closes it;
 * never inside a fence, and only at a complete line (the line being streamed might still become a list item or a
 * fence). Joined, blocks render as the text does, so keeping two blocks together is never wrong, only slower.
 */
export function splitBlocks(text: string, previous?: MarkdownBlocks | null): MarkdownBlocks {
  if (referenceDefinition.test(text)) return { text, sources: [text], stable: 0 };
  const reuse = previous && text.startsWith(previous.text.slice(0, previous.stable)) ? previous : null;
  const sources = reuse ? reuse.sources.slice(0, -1) : [];
  let start = reuse ? reuse.stable : 0;
  let fenceClosing: RegExp | null = null;
  let afterBlank = false;
  const cut = (at: number) => {
    if (at > start && text.slice(start, at).trim() !== '') {
      sources.push(text.slice(start, at));
      start = at;
    }
  };
  for (let position = start; ;) {
    const newline = text.indexOf('\n', position);
    if (newline === -1) break;
    const line = text.slice(position, newline);
    const next = newline + 1;
    if (fenceClosing) {
      if (fenceClosing.test(line)) {
        fenceClosing = null;
        cut(next);
      }
    } else {
      const opening = fenceOpening.exec(line);
      if (opening) {
        if (!line.startsWith(' ')) cut(position);
        fenceClosing = new RegExp(`^ {0,3}\\${opening[1]![0]}{${opening[1]!.length},}\\s*$`);
      } else if (afterBlank && line.trim() !== '' && !/^\s/.test(line) && !listItem.test(line)) {
        cut(position);
      }
      afterBlank = line.trim() === '';
    }
    position = next;
  }
  sources.push(text.slice(start));
  return { text, sources, stable: start };
}

// The first renders compile markdown-it's, highlight.js's and DOMPurify's code paths (interpreted, then compiled as
// they run again): done a few times while the page is idle, so an answer's first token does not pay for it
// (a cold render of one word took 1 to 2 ms, a warm one 0.2 ms).
const warmUp = () => {
  for (let round = 0; round < 5; round++) {
    renderMarkdown(
      `Warm *up* ${round}: \`code\`, [a link](https://example.com/${round})\n\n- one\n- two\n\n` +
        `\`\`\`js\nlet x = ${round};\n\`\`\`\n\nplain words`,
    );
  }
};
if (typeof requestIdleCallback === 'function') requestIdleCallback(warmUp);
else setTimeout(warmUp, 500);

/** Markdown, rendered by blocks (a block's HTML computed once), with a Copy code button on each code block. */
export function Markdown({ text }: { text: string }) {
  const blocks = useRef<MarkdownBlocks | null>(null);
  blocks.current = splitBlocks(text, blocks.current);
  const [status, setStatus] = useState('');
  const hasCode = text.includes('```') || text.includes('~~~');
  return (
    <>
      <div class="markdown" onClick={(event) => void copyCode(event, setStatus)}>
        {blocks.current.sources.map((source, index) => (
          <MarkdownBlock key={index} source={source} />
        ))}
      </div>
      {/* Where the copy says what it did: present with the first code block, so a screen reader hears the change. */}
      {hasCode ? (
        <p class="visually-hidden" role="status">
          {status}
        </p>
      ) : null}
    </>
  );
}

function MarkdownBlock({ source }: { source: string }) {
  const html = useMemo(() => renderMarkdown(source), [source]);
  const element = useRef<HTMLDivElement>(null);
  // Preact leaves a block's DOM alone while its HTML is unchanged, so the buttons stay; a new HTML gets new ones.
  useLayoutEffect(() => {
    if (element.current) addCopyButtons(element.current);
  }, [html]);
  return <div class="markdown-block" ref={element} dangerouslySetInnerHTML={{ __html: html }} />;
}

/** A bar above each code block: its language, and a Copy code button (clicks handled by the Markdown's own). */
function addCopyButtons(block: HTMLElement): void {
  for (const pre of block.querySelectorAll('pre.code')) {
    if (pre.previousElementSibling?.classList.contains('code-bar')) continue;
    const bar = document.createElement('div');
    bar.className = 'code-bar';
    const language = /language-(\S+)/.exec(pre.querySelector('code')?.className ?? '')?.[1];
    if (language) {
      const name = document.createElement('span');
      name.className = 'code-language';
      name.textContent = language;
      bar.append(name);
    }
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'secondary copy-code';
    button.textContent = 'Copy code';
    bar.append(button);
    pre.before(bar);
    // A code block wider than the answer scrolls: from the keyboard too.
    pre.setAttribute('tabindex', '0');
  }
}

async function copyCode(event: MouseEvent, say: (status: string) => void): Promise<void> {
  const button = (event.target as Element).closest('button.copy-code');
  const code = button?.parentElement?.nextElementSibling;
  if (!button || !code) return;
  try {
    await navigator.clipboard.writeText(code.textContent ?? '');
    button.textContent = 'Copied';
    say('Copied');
  } catch {
    say('Copying was refused: select the code and copy it');
    return;
  }
  setTimeout(() => {
    button.textContent = 'Copy code';
  }, 2000);
}
