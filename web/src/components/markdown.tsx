/**
 * A model's answer as Markdown, safely: markdown-it with `html: false` never passes raw HTML through (a `<script>`
 * in the text stays text), its link check drops `javascript:` and other unsafe URLs, code blocks are highlighted by
 * highlight.js (which escapes what it colours), and DOMPurify sanitises the result once more before it becomes DOM:
 * the answer is untrusted, and the defence should not rest on one library. Links open in a new tab without the
 * opener.
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
import { useMemo } from 'preact/hooks';

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

/** Markdown to sanitised HTML. */
export function renderMarkdown(text: string): string {
  return DOMPurify.sanitize(markdown.render(text), {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'img'],
    FORBID_ATTR: ['style'],
    ADD_ATTR: ['target'],
  });
}

// The first render compiles markdown-it's and DOMPurify's code paths: done once while the page is idle, so the first
// token of an answer does not wait for it.
const warmUp = () => renderMarkdown('*Warm* up: `code`, [a link](https://example.com)\n\n```js\nlet x = 1;\n```');
if (typeof requestIdleCallback === 'function') requestIdleCallback(warmUp);
else setTimeout(warmUp, 500);

export function Markdown({ text }: { text: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return <div class="markdown" dangerouslySetInnerHTML={{ __html: html }} />;
}
