/**
 * chatTurn: one turn of a conversation, from the user's message to the answer (workflow id
 * `chat-<conversation>-<turn>`). It waits for the conversation's previous turn, loads the history that fits the
 * model, calls the model through the same failover and credit saga as completions, runs the tool calls the model
 * asks for (each a local activity with the tool's own timeout and retry policy; a tool that ran is recorded and not
 * run again on replay), and loops until the model answers: at most `maxToolRounds` rounds with tools, then one more
 * without them. What the turn added is stored when it ends; its events stream as it goes (never through history).
 */
import {
  ActivityFailure,
  ApplicationFailure,
  defineQuery,
  proxyLocalActivities,
  setHandler,
} from '@temporalio/workflow';
import type { ChatActivities } from '../activities/chat-activities.ts';
import type { StoredMessage } from '../activities/conversations/conversation-store.ts';
import type { ChatCompletionRequest, ChatMessage, Tool, Usage } from '../common/chat.ts';
import type { ChatTurnEvent, ChatTurnInput, ChatTurnResult } from '../common/chat-turn.ts';
import type { Attempt, CompletionFailureDetails } from '../common/completion.ts';
import { creditsFor } from '../common/credits.ts';
import { callWithFailover, modelCallFailure } from './model-call.ts';

// Beginning waits for the previous turn of the conversation (bounded by that turn's own bounds); the rest are
// idempotent writes, retried until the database answers.
const { beginTurn, finishTurn } = proxyLocalActivities<ChatActivities>({
  startToCloseTimeout: '30 minutes',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
});

export interface ChatTurnTrace {
  status: 'running';
  attempts: Attempt[];
  toolCalls: Array<{ name: string; ok: boolean }>;
}

export const chatTurnTraceQuery = defineQuery<ChatTurnTrace>('trace');

export async function chatTurn(input: ChatTurnInput): Promise<ChatTurnResult> {
  const attempts: Attempt[] = [];
  const toolCalls: ChatTurnTrace['toolCalls'] = [];
  setHandler(chatTurnTraceQuery, () => ({ status: 'running', attempts, toolCalls }));
  const target = {
    turnId: input.turnId,
    conversationId: input.conversationId,
    sessionId: input.sessionId,
    channel: input.channel,
    turn: input.turn,
  };
  const added: StoredMessage[] = [];
  let seq = 1;
  try {
    if (input.candidates.length === 0) {
      throw modelCallFailure('upstream_error', 'No provider is available for this model', attempts);
    }
    const begun = await beginTurn({
      ...target,
      previousTurnId: input.previousTurnId,
      sessionKey: input.sessionKey,
      message: input.message,
      model: input.requestedModel,
      historyBudgetTokens: input.historyBudgetTokens,
    });
    const messages: ChatMessage[] = [...begun.messages];
    const offered: Tool[] = Object.values(input.tools).map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
    let nextAttempt = 1;
    let credits = 0;
    let usage: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    let model = input.requestedModel;
    let response = '';
    for (let round = 0; ; round++) {
      const withTools = round < input.maxToolRounds && offered.length > 0;
      const request: ChatCompletionRequest = {
        model: input.requestedModel,
        messages,
        // Always streamed from the provider, whether or not the client streams: the journal then records every
        // answer, so a call re-executed after a worker died reuses it (provider-calls.ts) and the tool calls it
        // asked for keep their ids, which is how a tool that ran is recognised and not run again.
        stream: true,
        ...(withTools ? { tools: offered } : {}),
        ...(input.reasoningEffort === undefined ? {} : { reasoning_effort: input.reasoningEffort }),
      };
      const served = await callWithFailover(
        {
          requestId: input.turnId,
          userId: input.userId,
          created: input.created,
          request,
          candidates: input.candidates,
          metered: input.metered,
        },
        {
          metered: input.metered,
          attempts,
          workflowId: input.turnId,
          firstAttempt: nextAttempt,
          extra: { seqBase: seq, collectMessage: true, workflowId: input.turnId },
        },
      );
      nextAttempt = served.nextAttempt;
      seq = served.nextSeq ?? seq;
      model = served.candidate.model;
      usage = {
        prompt_tokens: usage.prompt_tokens + served.usage.prompt_tokens,
        completion_tokens: usage.completion_tokens + served.usage.completion_tokens,
        total_tokens: usage.total_tokens + served.usage.total_tokens,
      };
      if (input.metered && served.candidate.creditRate !== undefined) {
        credits += creditsFor(served.usage.total_tokens, served.candidate.creditRate);
      }
      const message = served.message ?? { content: '', toolCalls: [] };
      const calls = withTools ? message.toolCalls : [];
      messages.push({ role: 'assistant', content: message.content, ...(calls.length ? { tool_calls: calls } : {}) });
      added.push({ role: 'assistant', content: message.content, toolCalls: calls });
      if (calls.length === 0) {
        response = message.content ?? '';
        break;
      }
      for (const call of calls) {
        const policy = input.tools[call.function.name];
        const { runToolCall } = proxyLocalActivities<ChatActivities>({
          // The tool's own deadline is enforced inside; this one only bounds a stuck activity.
          startToCloseTimeout: `${(policy?.timeoutMs ?? 30_000) + 10_000}ms`,
          retry: {
            maximumAttempts: policy?.maximumAttempts ?? 1,
            initialInterval: `${Math.max(policy?.initialIntervalMs ?? 500, 1)}ms`,
          },
        });
        const outcome = await runToolCall({
          turnId: input.turnId,
          conversationId: input.conversationId,
          callId: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
          seq,
        });
        seq += 2;
        toolCalls.push({ name: call.function.name, ok: outcome.ok });
        messages.push({ role: 'tool', tool_call_id: call.id, content: outcome.content });
        added.push({ role: 'tool', content: outcome.content, toolCallId: call.id, toolName: call.function.name });
      }
    }
    const final: ChatTurnEvent = {
      type: 'turn-done',
      turnId: input.turnId,
      sessionId: input.sessionKey,
      model,
      usage,
      credits,
      response,
    };
    await finishTurn({ ...target, status: 'done', messages: added, seq, final });
    return { turnId: input.turnId, response, model, usage, credits, toolCalls: toolCalls.length };
  } catch (error) {
    const cause = error instanceof ActivityFailure ? error.cause : error;
    const failure = cause instanceof ApplicationFailure ? cause : undefined;
    // A stream cut after content used positions past `seq`: the final event goes after them.
    const details = failure?.details?.[0] as CompletionFailureDetails | undefined;
    if (details?.nextSeq !== undefined) seq = Math.max(seq, details.nextSeq);
    const final: ChatTurnEvent = {
      type: 'turn-error',
      errorType: failure?.type ?? 'internal_error',
      message: failure?.message ?? (error instanceof Error ? error.message : String(error)),
    };
    await finishTurn({ ...target, status: 'failed', messages: added, seq, final });
    throw error;
  }
}
