/**
 * `POST /chat/suggest` (spec 4.1): follow-up questions the user might ask next. The conversation's last exchange
 * (the session's last user message and the answer after it, from the conversation store) and/or the `message`
 * sent are put to the fast model (AGENT_ROUTER_MODEL) with a JSON-schema response format asking for exactly
 * `count` suggestions. The call is an ordinary one-shot completion through the gateway's CompletionService: planned
 * for the caller's plan, admitted (rate limits, worst-case credit hold), failed over, and charged to the caller
 * through the same ledger as any `POST /v1/chat/completions`.
 */
import Router from '@koa/router';
import { z } from 'zod';
import type { ChatCompletionRequest } from '../../../../common/chat.ts';
import type { ConversationStore } from '../../../../activities/conversations/conversation-store.ts';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import type { Admission } from '../../../gateway/admission.ts';
import type { CompletionService } from '../../../gateway/routes/completions/service.ts';
import type { suggestResponseSchema } from './schema.ts';
import { suggestBodySchema } from './schema.ts';

export interface SuggestDependencies {
  completions: CompletionService;
  admission: Admission;
  conversations: ConversationStore;
  /** The fast model that writes the suggestions (settings AGENT_ROUTER_MODEL). */
  model: string;
}

/** How much of each side of the exchange the model reads: enough for the topic, bounded in cost. */
const quotedChars = 2_000;
const answerTokens = 400;

const suggestionsSchema = z.object({ suggestions: z.array(z.string()) });

export function suggestRoutes(dependencies: SuggestDependencies) {
  const router = new Router<CallerState>();

  router.post('/chat/suggest', async (context) => {
    const principal = requireCaller(context.state);
    const parsed = suggestBodySchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const { session_id: sessionId, message, count } = parsed.data;
    const exchange =
      sessionId === undefined ? {} : await lastExchange(dependencies.conversations, principal.userId, sessionId);
    const question = message ?? exchange.question;
    if (question === undefined) {
      throw new ApiError('invalid_request', `Session ${sessionId} has no messages yet: send message`, {
        param: 'message',
      });
    }
    const request = suggestionRequest(
      dependencies.model,
      question,
      message === undefined ? exchange.answer : undefined,
      count,
    );
    const started = await dependencies.completions.start(principal, request, {
      admit: (reservation) => dependencies.admission.admit(context, principal, reservation),
    });
    const answer = await dependencies.completions.answer(started);
    context.body = {
      suggestions: suggestionsOf(answer.message?.content ?? null, count),
      model: answer.model,
    } satisfies z.infer<typeof suggestResponseSchema>;
  });

  return router;
}

/** The session's last user message and the assistant's text answer to it, if any; 404 for another's session. */
async function lastExchange(
  conversations: ConversationStore,
  userId: string,
  sessionId: string,
): Promise<{ question?: string; answer?: string }> {
  const session = await conversations.session(`user:${userId}`, sessionId);
  if (!session) throw new ApiError('not_found', `No session ${sessionId}`, { param: 'session_id' });
  const userAt = session.messages.findLastIndex((stored) => stored.role === 'user' && !!stored.content);
  if (userAt < 0) return {};
  const answer = session.messages
    .slice(userAt + 1)
    .findLast((stored) => stored.role === 'assistant' && !!stored.content)?.content;
  return { question: session.messages[userAt]!.content ?? undefined, answer: answer ?? undefined };
}

/** The completion request: the question first (what the suggestions follow), the answer as context. */
function suggestionRequest(model: string, question: string, answer: string | undefined, count: number) {
  const context = answer === undefined ? '' : `\n\nThe assistant answered:\n${answer.slice(0, quotedChars)}`;
  const request: ChatCompletionRequest = {
    model,
    messages: [
      {
        role: 'system',
        content:
          `Suggest ${count} short follow-up questions the user is likely to ask next, in the user's language, ` +
          'each under 100 characters and different from the others. Answer with the JSON object only.',
      },
      { role: 'user', content: `${question.slice(0, quotedChars)}${context}` },
    ],
    max_tokens: answerTokens,
    response_format: {
      type: 'json_schema',
      json_schema: {
        name: 'follow_up_suggestions',
        schema: {
          type: 'object',
          properties: {
            suggestions: { type: 'array', items: { type: 'string' }, minItems: count, maxItems: count },
          },
          required: ['suggestions'],
          additionalProperties: false,
        },
      },
    },
  };
  return request;
}

/** The suggestions the model wrote: trimmed, non-empty, distinct, at most `count`; 502 when it wrote no such JSON. */
function suggestionsOf(content: string | null, count: number): string[] {
  let parsed: z.infer<typeof suggestionsSchema> | undefined;
  try {
    parsed = suggestionsSchema.safeParse(JSON.parse(content ?? '')).data;
  } catch {
    parsed = undefined;
  }
  const suggestions = [...new Set((parsed?.suggestions ?? []).map((text) => text.trim()).filter(Boolean))];
  if (suggestions.length === 0) {
    throw new ApiError('upstream_error', 'The model answered without suggestions in the JSON asked for');
  }
  return suggestions.slice(0, count);
}
