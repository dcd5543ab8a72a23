/**
 * The README and the guides (issue 19, item 8): the README stays a front door (under 15 KB), every relative link and
 * anchor in README.md and docs/*.md leads somewhere (an existing file, and for `#anchor` a heading of that file, by
 * GitHub's anchor rule), every guide is linked from the README and from the index and served by the services
 * (api/openapi/guides.ts), and a served page keeps no script, no dangerous link and no path outside the guides. No
 * platform: files and the renderer only.
 */
import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { guides, headingAnchors, linkTargets, renderGuide, resolveLink, slug } from '../../api/openapi/guides.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string) => readFileSync(`${root}${file}`, 'utf8');
const markdownFiles = [
  'README.md',
  ...readdirSync(`${root}docs`)
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

const anchorsOf = new Map<string, string[]>();
function anchors(file: string): string[] {
  if (!anchorsOf.has(file)) anchorsOf.set(file, headingAnchors(read(file)));
  return anchorsOf.get(file)!;
}

describe('the README', () => {
  it('is a front door: under 15 KB', () => {
    expect(statSync(`${root}README.md`).size).toBeLessThan(15 * 1024);
  });

  it('links every guide, and so does the index', () => {
    const guideFiles = readdirSync(`${root}docs`)
      .filter((name) => name.endsWith('.md') && name !== 'README.md')
      .map((name) => name.replace(/\.md$/, ''))
      .sort();
    // The served list is the folder's list.
    expect(guides.map(({ name }) => name).sort()).toEqual(guideFiles);
    for (const [file, prefix] of [
      ['README.md', 'docs/'],
      ['docs/README.md', ''],
    ] as const) {
      const linked = new Set(linkTargets(read(file)).map((target) => target.split('#')[0]));
      expect({ file, missing: guideFiles.filter((name) => !linked.has(`${prefix}${name}.md`)) }).toEqual({
        file,
        missing: [],
      });
    }
  });
});

describe('every link of README.md and docs/*.md', () => {
  it('reaches a file that exists and, with an anchor, a heading of that file', () => {
    const broken: string[] = [];
    let relative = 0;
    expect(markdownFiles.length).toBeGreaterThan(10);
    for (const file of markdownFiles) {
      for (const target of linkTargets(read(file))) {
        if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) relative += 1;
        if (target.startsWith('#')) {
          if (!anchors(file).includes(target.slice(1))) broken.push(`${file}: ${target} (no such heading)`);
          continue;
        }
        const resolved = resolveLink(file, target);
        if (!resolved) continue; // https:, mailto: and the like
        if (!existsSync(`${root}${resolved.file}`)) {
          broken.push(`${file}: ${target} (no such file)`);
        } else if (resolved.anchor && !anchors(resolved.file).includes(resolved.anchor)) {
          broken.push(`${file}: ${target} (no such heading in ${resolved.file})`);
        }
      }
    }
    expect(broken).toEqual([]);
    // The links were read: the README's and the index's alone are dozens.
    expect(relative).toBeGreaterThan(80);
  });

  it('uses GitHub’s anchors', () => {
    expect(slug('Agent service: login and accounts')).toBe('agent-service-login-and-accounts');
    expect(slug('Vectors (pgvector)')).toBe('vectors-pgvector');
    expect(slug('Media jobs: callbacks, cancel, list (beyond the spec)')).toBe(
      'media-jobs-callbacks-cancel-list-beyond-the-spec',
    );
    expect(slug('The `publish_site` tool — and 2 more')).toBe('the-publish_site-tool--and-2-more');
    expect(headingAnchors('# A\n\n## A\n\n## `b` c\n\n```\n# not a heading\n```\n')).toEqual(['a', 'a-1', 'b-c']);
  });
});

describe('a guide as the services serve it', () => {
  it('points its links at the served guides and screenshots', () => {
    const index = renderGuide('docs/README.md', read('docs/README.md'));
    for (const { name } of guides) expect(index).toContain(`href="/docs/guides/${name}"`);
    expect(index).toContain('href="/docs/guides/readme"');
    const readme = renderGuide('README.md', read('README.md'));
    expect(readme).toContain('href="/docs/guides/agent-service#agent-service-chat"');
    expect(readme).toContain('src="/docs/guides/web/chat-375.png"');
    expect(readme).toContain('<h2 id="two-commands">');
    const gateway = renderGuide('docs/gateway.md', read('docs/gateway.md'));
    expect(gateway).toContain('<h2 id="embeddings">');
    expect(gateway).toContain('href="/docs/guides/readme#a-first-request"');
  });

  it('has no script, no dangerous link and no link outside the guides', () => {
    const page = renderGuide(
      'docs/x.md',
      [
        '# Hostile <script>alert(1)</script>',
        '<script>alert(2)</script><img src=x onerror=alert(3)>',
        '[a](javascript:alert(4)) [b](../package.json) [c](web/) [d](../docs/gateway.md#errors) [e](https://example.com/)',
        '![f](../.env.example) ![g](web/chat-375.png)',
      ].join('\n\n'),
    );
    // Raw HTML is text, and a javascript: URL is no link.
    expect(page).not.toMatch(/<script|<img[^>]*onerror|href="javascript:/i);
    expect(page).toContain('[a](javascript:alert(4))');
    expect(page).toContain('&lt;script&gt;alert(2)&lt;/script&gt;');
    expect(page).toContain('<span>b</span> <span>c</span> <a href="/docs/guides/gateway#errors">d</a>');
    expect(page).toContain('<a href="https://example.com/">e</a>');
    expect(page).toContain('[f] <img src="/docs/guides/web/chat-375.png" alt="g">');
    expect(page).toContain('<title>Hostile &#60;script&#62;alert(1)&#60;/script&#62; — Tessera guides</title>');
  });
});
