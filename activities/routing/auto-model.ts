/**
 * The `auto` policy: picks a tier from what the request needs, in this order:
 * 1. prompt longer than `auto.long_context_chars` → `long_context_tier`, preferring long-context models;
 * 2. the last user message asks for proof or step-by-step reasoning → `reasoning_tier`;
 * 3. tools are offered → `tools_tier`;
 * 4. otherwise `default_tier` (cheap and fast).
 * The router then tries that tier's models in round-robin order like any other request.
 */
import type { Catalogue, Tier } from '../../common/catalogue.ts';
import { contentText, type ChatCompletionRequest } from '../../common/chat.ts';

const reasoningPattern = /\b(prove|proof|step[- ]by[- ]step|derive|theorem|reason (it )?out|solve for)\b/i;

export interface AutoChoice {
  tier: Tier;
  preferLongContext: boolean;
}

export function chooseAutoTier(catalogue: Catalogue, request: ChatCompletionRequest): AutoChoice {
  const { auto } = catalogue;
  const promptChars = request.messages.reduce((total, message) => total + contentText(message.content).length, 0);
  if (promptChars > auto.long_context_chars) return { tier: auto.long_context_tier, preferLongContext: true };
  const lastUser = [...request.messages].reverse().find((message) => message.role === 'user');
  if (lastUser && reasoningPattern.test(contentText(lastUser.content)))
    return { tier: auto.reasoning_tier, preferLongContext: false };
  if (request.tools?.length && request.tool_choice !== 'none')
    return { tier: auto.tools_tier, preferLongContext: false };
  return { tier: auto.default_tier, preferLongContext: false };
}
