/**
 * Sharing and export of a conversation (spec 2, Session: "can be exported, shared by public link"; 4.13):
 *
 * - `POST /share/{session_id}` `{expires_in_seconds?}` (owner; 201): a new read-only public link to the session as
 *   it is now (api/services/sharing/service.ts says what it shows and hides), `{share_id, session_id, url, token,
 *   message_count, created_at, expires_at}`; the token is shown this once. Each call makes another link.
 * - `DELETE /share/{session_id}` (owner): revokes every live link of the session, `{session_id, revoked}`.
 * - `GET /s/{token}` (public): the shared conversation, an HTML page, or JSON with `Accept: application/json`. Never
 *   indexed (`X-Robots-Tag` and the robots meta tag), no referrer, not cached (a revocation takes effect at once), a
 *   CSP that allows nothing but the page's own style. A revoked, expired or unknown link is the same 404.
 * - `GET /export/{session_id}?format=md|json` (owner): the whole conversation as a Markdown or JSON attachment
 *   (`conversation-<session>.md|json`).
 *
 * Another user's session is a 404 on each, as one that does not exist.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import { requireCaller, serviceOrigin, type CallerState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import type { SharingService } from '../../../services/sharing/service.ts';
import { sharedPage, sharedPageStyleHash, transcriptMarkdown } from '../../../services/sharing/render.ts';
import { exportQuerySchema, sessionIdSchema, shareBodySchema, shareTokenSchema, type ShareResponse } from './schema.ts';

type SharingContext = Context & { state: CallerState; params: Record<string, string> };

/** The caller's conversation-store owner and the session id of the path (400 when malformed). */
function sessionOf(context: SharingContext): { owner: string; key: string } {
  const principal = requireCaller(context.state);
  const parsed = sessionIdSchema.safeParse(context.params.session_id);
  if (!parsed.success) {
    throw new ApiError('invalid_request', `session_id: ${parsed.error.issues[0]!.message}`, { param: 'session_id' });
  }
  return { owner: `user:${principal.userId}`, key: parsed.data };
}

const noSuchSession = (key: string) => new ApiError('not_found', `No session ${key}`, { param: 'session_id' });

/** Nothing but the page's own style; no frames, forms or base URL. */
const sharedPagePolicy = `default-src 'none'; style-src ${sharedPageStyleHash}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

export function sharingRoutes(dependencies: { sharing: SharingService; publicUrl?: string }) {
  const { sharing } = dependencies;
  const router = new Router<CallerState>();

  router.post('/share/:session_id', async (context) => {
    const { owner, key } = sessionOf(context);
    const body = shareBodySchema.safeParse(context.request.body ?? {});
    if (!body.success) throw invalidRequest(body.error);
    const created = await sharing.share(owner, key, body.data.expires_in_seconds);
    if (!created) throw noSuchSession(key);
    const origin = dependencies.publicUrl ? new URL(dependencies.publicUrl).origin : serviceOrigin(context);
    context.status = 201;
    context.body = {
      share_id: created.shareId,
      session_id: key,
      url: `${origin}/s/${created.token}`,
      token: created.token,
      message_count: created.messageCount,
      created_at: created.createdAt.toISOString(),
      expires_at: created.expiresAt?.toISOString() ?? null,
    } satisfies ShareResponse;
  });

  router.delete('/share/:session_id', async (context) => {
    const { owner, key } = sessionOf(context);
    const revoked = await sharing.revoke(owner, key);
    if (revoked === null) throw noSuchSession(key);
    context.body = { session_id: key, revoked };
  });

  router.get('/s/:token', async (context) => {
    context.set('X-Robots-Tag', 'noindex, nofollow, noarchive');
    context.set('Referrer-Policy', 'no-referrer');
    context.set('Cache-Control', 'no-store');
    context.set('X-Content-Type-Options', 'nosniff');
    const token = shareTokenSchema.safeParse(context.params.token);
    const shared = token.success ? await sharing.shared(token.data) : null;
    if (!shared) throw new ApiError('not_found', 'No such shared conversation (the link may be revoked or expired)');
    if (context.accepts('html', 'json') === 'json') {
      context.body = shared;
      return;
    }
    context.set('Content-Security-Policy', sharedPagePolicy);
    context.type = 'text/html; charset=utf-8';
    context.body = sharedPage(shared);
  });

  router.get('/export/:session_id', async (context) => {
    const { owner, key } = sessionOf(context);
    const query = exportQuerySchema.safeParse(context.query);
    if (!query.success) throw invalidRequest(query.error);
    const transcript = await sharing.transcript(owner, key);
    if (!transcript) throw noSuchSession(key);
    const fileName = `conversation-${key.replace(/[^A-Za-z0-9_.-]+/g, '-')}.${query.data.format}`;
    context.attachment(fileName);
    context.set('Cache-Control', 'no-store');
    if (query.data.format === 'json') {
      context.type = 'application/json; charset=utf-8';
      context.body = JSON.stringify(transcript, null, 2);
    } else {
      context.type = 'text/markdown; charset=utf-8';
      context.body = transcriptMarkdown(transcript);
    }
  });

  return router;
}
