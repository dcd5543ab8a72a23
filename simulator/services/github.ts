/**
 * GitHub, played both ways (GITHUB_API_BASE_URL=${sim}/github): the REST API calls of the github_comment tool, and
 * repository webhook deliveries signed as GitHub signs them.
 *
 * - `POST /github/repos/{owner}/{repo}/issues/{number}/comments {body}` → 201 with the comment (`id`, `html_url`,
 *   `body`, `user`, `created_at`); `GET /github/repos/{owner}/{repo}/issues/comments` → the repository's comments,
 *   newest first with `direction=desc`, at most `per_page`. Both want `Authorization: Bearer <token>` (`token …`
 *   too): none is 401 "Requires authentication", the token `revoked` 401 "Bad credentials"; a repository whose
 *   owner is `forbidden` is 403.
 * - `POST /github/_deliver {webhook_url, secret, event, payload, delivery?}` POSTs `payload` as GitHub delivers a
 *   webhook (`X-GitHub-Event`, `X-GitHub-Delivery`: a GUID unless given, `X-GitHub-Hook-ID`, `X-Hub-Signature-256:
 *   sha256=<hex HMAC-SHA256 of the body with the secret>`, User-Agent `GitHub-Hookshot/…`) and answers `{status,
 *   body, delivery}`.
 * - `GET /github/_comments` lists every comment posted (`{comments: [{repository, issue_number, body, …}]}`),
 *   `DELETE` clears.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { readJsonObject, sendJson } from '../transport.ts';
import type { SimulatedService } from './index.ts';

const maxBodyBytes = 1024 * 1024;

interface Comment {
  id: number;
  repository: string;
  issue_number: number;
  body: string;
  html_url: string;
  user: { login: string; type: string };
  created_at: string;
}

let comments: Comment[] = [];
let nextId = 1_000_001;

export const githubService: SimulatedService = {
  prefix: '/github/',
  async handle(request, response, url) {
    const path = url.pathname.slice('/github'.length);
    if (path === '/_comments') {
      if (request.method === 'DELETE') comments = [];
      return sendJson(response, 200, request.method === 'DELETE' ? { deleted: true } : { comments });
    }
    if (path === '/_deliver') {
      const args = (await readJsonObject(request, 30 * 1024 * 1024)) ?? {};
      if (typeof args.webhook_url !== 'string' || !/^https?:\/\//.test(args.webhook_url)) {
        return sendJson(response, 400, { error: 'webhook_url must be an http(s) URL' });
      }
      if (typeof args.secret !== 'string' || typeof args.event !== 'string') {
        return sendJson(response, 400, { error: 'secret and event are required' });
      }
      const body = JSON.stringify(args.payload ?? {});
      const delivery = typeof args.delivery === 'string' ? args.delivery : randomUUID();
      const answer = await fetch(args.webhook_url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'GitHub-Hookshot/simulated',
          'x-github-event': args.event,
          'x-github-delivery': delivery,
          'x-github-hook-id': '424242',
          'x-hub-signature-256': `sha256=${createHmac('sha256', args.secret).update(body).digest('hex')}`,
        },
        body,
      });
      return sendJson(response, 200, { status: answer.status, body: await answer.text(), delivery });
    }
    const match = /^\/repos\/([\w.-]+)\/([\w.-]+)\/issues\/(?:(\d+)\/)?comments$/.exec(path);
    if (!match) return sendJson(response, 404, { message: 'Not Found', status: '404' });
    const token = /^(?:Bearer|token) (\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
    if (!token) return sendJson(response, 401, { message: 'Requires authentication', status: '401' });
    if (token === 'revoked') return sendJson(response, 401, { message: 'Bad credentials', status: '401' });
    const [, owner, repo, issue] = match;
    if (owner === 'forbidden') {
      return sendJson(response, 403, { message: 'Resource not accessible by personal access token', status: '403' });
    }
    const repository = `${owner}/${repo}`.toLowerCase();
    if (request.method === 'GET' && !issue) {
      const perPage = Math.min(Number(url.searchParams.get('per_page') ?? 30) || 30, 100);
      const mine = comments.filter((comment) => comment.repository === repository);
      const ordered = url.searchParams.get('direction') === 'desc' ? [...mine].reverse() : mine;
      return sendJson(
        response,
        200,
        ordered.slice(0, perPage).map(({ repository: _r, issue_number: _n, ...rest }) => rest),
      );
    }
    if (request.method === 'POST' && issue) {
      const body = await readJsonObject(request, maxBodyBytes);
      if (typeof body?.body !== 'string' || body.body.trim() === '') {
        return sendJson(response, 422, { message: 'Validation Failed', errors: [{ field: 'body', code: 'missing' }] });
      }
      const id = nextId++;
      const comment: Comment = {
        id,
        repository,
        issue_number: Number(issue),
        body: body.body,
        html_url: `https://github.com/${owner}/${repo}/issues/${issue}#issuecomment-${id}`,
        user: { login: 'tessera-sim', type: 'User' },
        created_at: new Date().toISOString(),
      };
      comments.push(comment);
      const { repository: _r, issue_number: _n, ...shown } = comment;
      return sendJson(response, 201, shown);
    }
    return sendJson(response, 404, { message: 'Not Found', status: '404' });
  },
};
