/**
 * The Messages door: Anthropic's Messages API (`POST /v1/messages`, `POST /v1/messages/count_tokens`) on the
 * platform's one completion path. A Message is a completion: the same plan, admission (rate limits and the hold in
 * one statement), workflow, failover, ledger and stream journal as `/v1/chat/completions`, so it is charged exactly as
 * a completion of the same tokens; only the translation at the edge differs (./translate.ts, ./stream.ts). Its id is
 * `msg_…`, and `GET /api/v1/requests/{id}` shows its attempts. Keys come as `x-api-key` (Anthropic's SDKs) or
 * `Authorization: Bearer`; `anthropic-version` and `anthropic-beta` are accepted and not needed. Errors are in
 * Anthropic's shape (common/doors/messages/errors.ts, `anthropicError`).
 */
import Router from '@koa/router';
import type { AuthState } from '../../../auth.ts';
import { invalidRequest } from '../../../errors.ts';
import type { CompletionService } from '../completions/service.ts';
import { serveCompletion, type CompletionDoor } from '../completions/relay.ts';
import { countPromptTokens } from '../../../../activities/credits/tokens.ts';
import {
  countTokensRequestSchema,
  messagesRequestSchema,
  type MessagesRequest,
} from '../../../../common/doors/messages/schema.ts';
import { readImage } from '../media/inputs.ts';
import { renderMessageEvents } from './stream.ts';
import { presentMessage, toCompletionRequest } from '../../../../common/doors/messages/translate.ts';

/**
 * `POST /v1/messages`: mounted with `/v1/chat/completions`, rate limited by its admission as a completion is. An image
 * given by URL is fetched here, through the one URL guard (activities/net/url-guard.ts: public addresses only, hosts in
 * FETCH_ALLOWED_HOSTS excepted, a size and time limit, its type sniffed from its bytes), and sent on as base64: every
 * provider takes that, and no provider is asked to fetch an address a client chose.
 */
export function messageRoutes(door: CompletionDoor, images: { allowedHosts: string[] }) {
  const routes = new Router<AuthState>();

  routes.post('/v1/messages', async (context) => {
    const parsed = messagesRequestSchema.safeParse(context.request.body);
    if (!parsed.success) throw invalidRequest(parsed.error);
    await inlineUrlImages(parsed.data, images.allowedHosts);
    const request = toCompletionRequest(parsed.data);
    const started = await serveCompletion(context, door, request, {
      idPrefix: 'msg_',
      summary: 'Message',
      present: (started, answer) => presentMessage(started.requestId, answer),
      renderer: (started) => renderMessageEvents(started.requestId, request.model, countPromptTokens(request.messages)),
    });
    // Anthropic's SDKs read the request id from `request-id` (`message._request_id`).
    if (!context.headerSent) context.set('request-id', started.requestId);
  });

  return routes;
}

/** `POST /v1/messages/count_tokens`: a keyed route like any other (limited by the keyed limiter, not admitted). */
export function countTokensRoutes(completions: CompletionService) {
  const routes = new Router<AuthState>();

  // The prompt's tokens as the platform counts them to hold credits and to bill an answer whose provider reported
  // no usage (activities/credits/tokens.ts); a provider's own count, which the bill uses when given, may differ.
  // The model is checked as a Message's would be (it exists, and is in the caller's plan).
  routes.post('/v1/messages/count_tokens', async (context) => {
    const parsed = countTokensRequestSchema.safeParse(context.request.body);
    if (!parsed.success) throw invalidRequest(parsed.error);
    const request = toCompletionRequest(parsed.data);
    await completions.plan(context.state.principal, request);
    context.body = { input_tokens: countPromptTokens(request.messages) };
  });

  return routes;
}

/** Replaces each image given by URL with its bytes, fetched through the URL guard (a refusal names the block). */
async function inlineUrlImages(request: MessagesRequest, allowedHosts: string[]): Promise<void> {
  for (const [index, message] of request.messages.entries()) {
    if (typeof message.content === 'string') continue;
    for (const [at, block] of message.content.entries()) {
      if (block.type !== 'image' || block.source.type !== 'url') continue;
      const image = await readImage({ url: block.source.url }, `messages.${index}.content.${at}.source.url`, {
        allowedHosts,
      });
      block.source = {
        type: 'base64',
        media_type: image.mime as 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp',
        data: Buffer.from(image.bytes).toString('base64'),
      };
    }
  }
}
