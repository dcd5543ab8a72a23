/**
 * Typed parts a provider adapter yields while streaming. Adapters translate their wire protocol into these;
 * only the HTTP edge frames them as OpenAI chunks and SSE. Event names are noun-action.
 */
import type { FinishReason, Usage } from './chat.ts';

export type StreamPart =
  | { type: 'text-delta'; text: string }
  /** Reasoning text of a reasoning model, where its provider exposes it (shown as `thinking`, never stored). */
  | { type: 'reasoning-delta'; text: string }
  /** A tool call's pieces: the first part for an index carries id and name, later ones argument text. */
  | { type: 'tool-call-delta'; index: number; id?: string; name?: string; argumentsDelta: string }
  /** `stopSequence`: which of the request's stop sequences ended the answer, where the provider says (Anthropic). */
  | { type: 'finish'; reason: FinishReason; rawReason: string | null; stopSequence?: string }
  | { type: 'usage'; usage: Usage };
