/**
 * The OpenAPI contract of both services (issue 19, item 7): every route the routers serve is in its service's
 * `/openapi.json` and every documented operation is a route (read from the routers, api/route-table.ts, so a route
 * added without a contract fails here), each document validates against the OpenAPI 3.1 schema, `/openapi.json` and
 * `/docs` are public (a sent credential must still be valid), and the reference page renders the document in a real
 * browser (Debian's Chromium) from this origin alone. The response check (api/openapi/response-check.ts) that the
 * test platform turns on for every test file is shown at work on a small app: an answer the document does not
 * promise becomes a 500 naming the difference.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import Router from '@koa/router';
import { Validator } from '@seriousme/openapi-schema-validator';
import Koa from 'koa';
import { spawnSync } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { z } from 'zod';
import { ApiError, errorRenderer } from '../../api/errors.ts';
import { json, route } from '../../api/openapi/contract.ts';
import { openApiPath } from '../../api/openapi/document.ts';
import { responseCheck } from '../../api/openapi/response-check.ts';
import { guides, guidesContentSecurityPolicy } from '../../api/openapi/guides.ts';
import { docsContentSecurityPolicy } from '../../api/openapi/routes.ts';
import { routeTable } from '../../api/route-table.ts';
import { createLogger } from '../../process/logger.ts';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';

let platform: TestPlatform;

beforeAll(async () => {
  platform = await startTestPlatform();
}, 300_000);

afterAll(async () => {
  await platform?.close();
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const httpMethods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

function services() {
  return [
    { name: 'gateway', base: platform.gateway.url, app: platform.gateway.app },
    { name: 'agents', base: platform.agentsUrl, app: platform.gateway.agents!.app },
  ];
}

describe('the OpenAPI documents', () => {
  it('list every route of both services, and nothing that is not a route', async () => {
    const problems: Record<string, { undocumented: string[]; notRoutes: string[] }> = {};
    for (const { name, base, app } of services()) {
      const response = await fetch(`${base}/openapi.json`);
      expect(response.status).toBe(200);
      const document = (await response.json()) as Json;
      expect(document.openapi).toBe('3.1.0');
      const documented = new Set(
        Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
          Object.keys(item)
            .filter((method) => httpMethods.includes(method))
            .map((method) => `${method.toUpperCase()} ${path}`),
        ),
      );
      const routes = routeTable(app).map((entry) => `${entry.method} ${openApiPath(entry.path)}`);
      problems[name] = {
        undocumented: routes.filter((operation) => !documented.has(operation)),
        notRoutes: [...documented].filter((operation) => !routes.includes(operation)),
      };
      // Far more than a handful: the routers were read.
      expect(routes.length).toBeGreaterThan(40);
    }
    expect(problems).toEqual({
      gateway: { undocumented: [], notRoutes: [] },
      agents: { undocumented: [], notRoutes: [] },
    });
  });

  it('validate against the OpenAPI 3.1 schema', async () => {
    for (const { base } of services()) {
      const document = (await (await fetch(`${base}/openapi.json`)).json()) as Json;
      const result = await new Validator().validate(document);
      expect({ base, valid: result.valid, errors: result.errors }).toEqual({ base, valid: true, errors: undefined });
    }
  });

  it('describe request bodies, parameters, security, streams, uploads and errors', async () => {
    const gateway = (await (await platform.fetch('/openapi.json')).json()) as Json;
    const agents = (await (await platform.agents('/openapi.json')).json()) as Json;
    const completions = gateway.paths['/v1/chat/completions'].post;
    expect(completions.requestBody.content['application/json'].schema.required).toEqual(['model', 'messages']);
    expect(Object.keys(completions.responses['200'].content)).toEqual(['application/json', 'text/event-stream']);
    expect(completions.responses['402'].content['application/json'].schema.$ref).toBe('#/components/schemas/Error');
    expect(completions.security).toEqual([{ bearerKey: [] }]);
    expect(gateway.components.securitySchemes.bearerKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    // The agent service: cookie and key everywhere, X-API-Key on /api/v1/*; guests on the public routes.
    expect(agents.paths['/api/v1/chat'].post.security).toEqual([
      { bearerKey: [] },
      { sessionCookie: [] },
      { apiKeyHeader: [] },
    ]);
    expect(agents.paths['/memory/list'].get.security).toEqual([{ bearerKey: [] }, { sessionCookie: [] }]);
    expect(agents.paths['/agents'].get.security).toEqual([{}, { bearerKey: [] }, { sessionCookie: [] }]);
    expect(agents.components.securitySchemes.sessionCookie).toMatchObject({ in: 'cookie', name: 'tessera_session' });
    const history = agents.paths['/history/{session_id}'].get;
    expect(history.parameters.map((parameter: Json) => `${parameter.in} ${parameter.name}`).sort()).toEqual([
      'path session_id',
      'query before',
      'query limit',
    ]);
    // The agent stream's events, one schema per `type`.
    const stream = agents.components.schemas.AgentStreamEvent;
    expect(JSON.stringify(stream)).toContain('hitl_required');
    expect(Object.keys(agents.paths['/chat/stream/{session_id}'].post.responses)).toEqual(
      expect.arrayContaining(['200', '302', '400', '401', '402', '403']),
    );
    // An upload, a download.
    expect(
      agents.paths['/upload'].post.requestBody.content['multipart/form-data'].schema.properties.file,
    ).toMatchObject({ type: 'string', format: 'binary' });
    expect(Object.keys(agents.paths['/tts'].post.responses['200'].content)).toEqual(['audio/mpeg']);
  });

  it('and the reference page are public, but a credential that is sent must be valid', async () => {
    for (const { base } of services()) {
      for (const path of ['/openapi.json', '/docs', '/docs/reference.js']) {
        expect((await fetch(`${base}${path}`)).status).toBe(200);
        const forged = await fetch(`${base}${path}`, { headers: { authorization: 'Bearer te_forged_key_0000000000' } });
        expect(forged.status).toBe(401);
        expect(((await forged.json()) as Json).error.type).toBe('authentication_error');
      }
      const page = await fetch(`${base}/docs`);
      expect(page.headers.get('content-security-policy')).toBe(docsContentSecurityPolicy);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await page.text()).toContain('<script src="/docs/scalar.js"></script>');
      const bundle = await fetch(`${base}/docs/scalar.js`);
      expect(bundle.headers.get('content-type')).toMatch(/^text\/javascript/);
      expect((await bundle.arrayBuffer()).byteLength).toBeGreaterThan(1_000_000);
    }
  });
});

describe('the guides (README.md and docs/*.md), served read-only beside the reference', () => {
  it('are linked from each document’s introduction and served as pages without script', async () => {
    for (const { base } of services()) {
      const document = (await (await fetch(`${base}/openapi.json`)).json()) as Json;
      for (const { name } of guides) expect(document.info.description).toContain(`(/docs/guides/${name})`);
      for (const [path, expected] of [
        ['/docs/guides', 'href="/docs/guides/gateway"'],
        ['/docs/guides/readme', '<h2 id="a-first-request">'],
        ['/docs/guides/gateway', '<h2 id="embeddings">'],
        ['/docs/guides/web-app', 'src="/docs/guides/web/chat-approvals-1280.png"'],
      ] as const) {
        const page = await fetch(`${base}${path}`);
        expect({ path, status: page.status }).toEqual({ path, status: 200 });
        expect(page.headers.get('content-type')).toMatch(/^text\/html/);
        expect(page.headers.get('content-security-policy')).toBe(guidesContentSecurityPolicy);
        expect(page.headers.get('x-content-type-options')).toBe('nosniff');
        const html = await page.text();
        expect(html).toContain(expected);
        expect(html).not.toMatch(/<script/i);
      }
      const screenshot = await fetch(`${base}/docs/guides/web/chat-375.png`);
      expect(screenshot.status).toBe(200);
      expect(screenshot.headers.get('content-type')).toBe('image/png');
      expect(Buffer.from(await screenshot.arrayBuffer()).subarray(0, 8)).toEqual(
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      );
    }
  });

  it('serve those files and nothing else', async () => {
    for (const { base } of services()) {
      for (const path of [
        '/docs/guides/nope',
        '/docs/guides/gateway.md',
        '/docs/guides/..%2Fpackage.json',
        '/docs/guides/..%2F..%2F.env.example',
        '/docs/guides/web/nope.png',
        '/docs/guides/web/..%2F..%2Fpackage.json',
        '/docs/guides/web/chat-375.PNG',
      ]) {
        const answer = await fetch(`${base}${path}`);
        expect({ path, status: answer.status }).toEqual({ path, status: 404 });
        expect(((await answer.json()) as Json).error.type).toBe('not_found');
      }
      const forged = await fetch(`${base}/docs/guides/gateway`, {
        headers: { authorization: 'Bearer te_forged_key_0000000000' },
      });
      expect(forged.status).toBe(401);
    }
  });
});

// `npm test` installs Debian's Chromium when it is missing (scripts/lib/debian-packages.ts).
const chromiumPath = spawnSync('sh', ['-c', 'command -v chromium']).stdout.toString().trim() || '/usr/bin/chromium';

describe('the reference page in a real browser (Chromium)', () => {
  let browser: Browser;

  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  it.each([
    ['gateway', 'Chat completion (OpenAI-compatible)'],
    ['agents', 'Mail a magic login link'],
  ])(
    'renders the %s document from this origin alone',
    async (name, operation) => {
      const base = name === 'gateway' ? platform.gateway.url : platform.agentsUrl;
      const page = await browser.newPage();
      const elsewhere: string[] = [];
      const refusals: string[] = [];
      page.on('request', (request) => {
        const url = new URL(request.url());
        if (!['data:', 'blob:'].includes(url.protocol) && url.origin !== base) elsewhere.push(request.url());
      });
      page.on('console', (message) => {
        if (/Content Security Policy|Refused to/i.test(message.text())) refusals.push(message.text());
      });
      try {
        await page.goto(`${base}/docs`);
        await page.getByText(operation).first().waitFor({ timeout: 90_000 });
        // The introduction links the guides; one of them opens from this origin, its screenshots with it.
        await page.locator('a[href="/docs/guides/web-app"]').first().waitFor({ timeout: 30_000 });
        await page.screenshot({ path: `/tmp/tessera-openapi-docs-${name}.png` });
        await page.goto(`${base}/docs/guides/web-app`);
        await page.getByRole('heading', { name: 'Web app', level: 1 }).waitFor();
        const images = await page.locator('main img').evaluateAll((elements) =>
          elements.map((element) => {
            const image = element as unknown as { complete: boolean; naturalWidth: number };
            return image.complete && image.naturalWidth > 0;
          }),
        );
        expect(images.length).toBeGreaterThan(3);
        expect(images.every(Boolean)).toBe(true);
        expect(elsewhere).toEqual([]);
        expect(refusals).toEqual([]);
      } finally {
        await page.close();
      }
    },
    120_000,
  );
});

describe('the response check', () => {
  const contract = route({
    method: 'GET',
    path: '/things/:id',
    summary: 'A thing',
    tags: ['Test'],
    access: 'public',
    responses: { 200: json(z.strictObject({ id: z.string(), count: z.number().int() }), 'The thing') },
    errors: { 404: 'No such thing' },
  });
  let server: ReturnType<Koa['listen']>;
  let base: string;

  beforeAll(async () => {
    const app = new Koa();
    const logger = createLogger('openapi-test');
    logger.level = 'silent';
    app.use(responseCheck('gateway', [contract], logger));
    app.use(errorRenderer(logger));
    const router = new Router();
    const answers: Record<string, (context: Koa.Context) => void> = {
      right: (context) => (context.body = { id: 'right', count: 1 }),
      wrong: (context) => (context.body = { id: 'wrong', count: 'one' }),
      extra: (context) => (context.body = { id: 'extra', count: 1, secret: 'not documented' }),
      teapot: (context) => {
        context.status = 418;
        context.body = { id: 'teapot', count: 1 };
      },
      text: (context) => (context.body = 'plain text'),
      missing: () => {
        throw new ApiError('not_found', 'No such thing');
      },
      conflict: () => {
        throw new ApiError('conflict', 'An error the document does not list');
      },
    };
    router.get('/things/:id', (context) => answers[context.params.id!]!(context as unknown as Koa.Context));
    app.use(router.routes());
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  const get = async (id: string) => {
    const response = await fetch(`${base}/things/${id}`);
    return { status: response.status, body: (await response.json().catch(() => null)) as Json };
  };

  it('lets the documented answers through', async () => {
    expect(await get('right')).toEqual({ status: 200, body: { id: 'right', count: 1 } });
    expect(await get('missing')).toMatchObject({ status: 404, body: { error: { type: 'not_found' } } });
  });

  it('turns every other answer into a 500 naming the route, the status and the difference', async () => {
    const refused = async (id: string) => {
      const { status, body } = await get(id);
      expect(status).toBe(500);
      expect(body.error.type).toBe('internal_error');
      return body.error.message as string;
    };
    expect(await refused('wrong')).toMatch(/GET \/things\/:id answered 200: count: .*expected number/i);
    expect(await refused('extra')).toMatch(/answered 200: .*secret/);
    expect(await refused('teapot')).toMatch(/answered 418: status 418 is not documented/);
    expect(await refused('text')).toMatch(/content type text\/plain is not documented/);
    expect(await refused('conflict')).toMatch(/answered 409: status 409 is not documented/);
  });

  it('is on in the test platform, for every test file', () => {
    expect(platform.environment.OPENAPI_RESPONSE_CHECK).toBe('true');
  });
});
