/**
 * Provider calls and their in-process registry. A call is one attempt of one completion on one candidate:
 * it claims the half-open probe when needed, calls the adapter, streams events to the hub and the journal,
 * and records the outcome in the shared circuit breaker.
 *
 * The API starts attempt 1 speculatively, alongside the workflow's start; the workflow's local activity for
 * that attempt then adopts the call in flight instead of calling the provider a second time. Every other
 * attempt is started by its local activity. A call nobody adopts (the workflow ran elsewhere) is aborted.
 */
import type { LoadedCatalogue, ProviderEndpoint } from '../config/load-catalogue.ts';
import { resolveModel } from '../common/catalogue.ts';
import type { ChatCompletionRequest, FinishReason, Usage } from '../common/chat.ts';
import {
  completionWorkflowId,
  type Candidate,
  type CompletionMessage,
  type SequencedStreamEvent,
  type StreamEvent,
} from '../common/completion.ts';
import type { CreditLedger, SettledWrite } from './credits/credit-ledger.ts';
import { countPromptTokens, countTokens, countToolCallTokens, worstCaseCredits } from './credits/tokens.ts';
import { creditsFor } from '../common/credits.ts';
import { createProviderAdapter } from './providers/index.ts';
import { ProviderError, type ProviderAdapter, type ProviderRequest } from './providers/types.ts';
import type { CircuitBreaker } from './routing/circuit-breaker.ts';
import type { StreamHub } from './streaming/stream-hub.ts';
import type { StreamPart } from '../common/stream-parts.ts';
import {
  AlongsideFailed,
  JournalUnreachable,
  type JournalWriter,
  type StreamJournal,
} from './streaming/stream-journal.ts';
import type { TurnStops } from './streaming/turn-stops.ts';
import type { ProviderHeadroom } from './routing/provider-headroom.ts';
import { readRateLimits } from './providers/rate-limits.ts';
import type { ResponseEnd } from './responses/response-store.ts';
import type { StoredMessage, TurnTarget } from './conversations/conversation-store.ts';
import type { TurnTotals } from '../common/turn-totals.ts';
import type { PoolClient } from 'pg';
import { startModelCallSpan, type ModelCallTracing } from './model-call-spans.ts';

export interface ProviderCallInput {
  requestId: string;
  attempt: number;
  /** A later candidate of the call's plan, tried after an earlier one failed or was skipped (traces say so). */
  failover?: boolean;
  candidate: Candidate;
  request: ChatCompletionRequest;
  /** The account charged; with `metered`, the attempt's worst case is reserved before the call. */
  userId?: string;
  metered?: boolean;
  /** The ledger's key base: the calling workflow's id (default: the completion workflow of `requestId`). */
  workflowId?: string;
  /** Sequence number of this call's first stream event (a chat turn's later rounds continue its stream). */
  seqBase?: number;
  /** Streamed: also assemble the message (text and tool calls) and return it (chat turns store it). */
  collectMessage?: boolean;
  /**
   * The attempt whose worst case was held before the workflow's call (default 1: the API holds a completion's and a
   * chat turn's first attempt; a turn routed inside its workflow holds its agent's first call in the routing step).
   */
  heldAttempt?: number;
  /**
   * Events the turn published to its waiting response but not yet to the journal (its `memories-loaded`): journalled
   * with this call's events, ahead of them, instead of in a transaction of their own.
   */
  journalFirst?: SequencedStreamEvent[];
  /**
   * A turn's call that a person may stop (a turn that is not a loop; turn-stops.ts): stopped, the stream ends there and
   * the call succeeds with what it had (`stopped`), its usage estimated from what was sent and settled.
   */
  stoppable?: boolean;
  /**
   * A chat turn's model call that may be its last (turns that are not loops): when its answer ends the turn (it
   * succeeds, asks for no tool the call offered, and was not stopped), the turn is closed in the transaction of the
   * call's settlement and last journal batch, by the process's TurnCloser, instead of by a step of its own
   * (`turnClosed` says so). One local activity and one transaction fewer per turn.
   */
  closeTurn?: TurnClosing;
  /**
   * The Response (of the Responses door) this call answers: when it succeeds (or is stopped by a cancel), the
   * response's end is written with the call's settlement, in its statement when nothing was streamed, else in the
   * transaction of the settlement and the last journal batch (`responseClosed` says so), and a non-streamed answer
   * reaches its waiting request only after that commit, so a client that reads the
   * response at once reads it ended. The workflow records the end itself when the call did not.
   */
  closeResponse?: { responseId: string };
  /**
   * Work nobody waits on (a batch's line): the fraction of the provider's limits it leaves to requests someone waits
   * on. When the provider's remaining requests or tokens are down to it, the attempt is skipped (`rate limit reserve`,
   * `retryAfterSeconds` until its window's reset) instead of calling (activities/routing/provider-headroom.ts).
   */
  reserve?: number;
}

/** Writes a Response's end (activities/responses/response-store.ts). */
export interface ResponseCloser {
  /** On a transaction's client. */
  finish(end: ResponseEnd, executor?: PoolClient): Promise<void>;
  /** As a write riding in the settlement's statement. */
  settledEnd(end: ResponseEnd): SettledWrite;
}

/** What closing a turn with its last model call needs (ProviderCallInput.closeTurn). */
export interface TurnClosing {
  target: TurnTarget;
  sessionKey: string;
  /** What the turn added before this call, stored from position `firstSeq`. */
  messages: StoredMessage[];
  firstSeq: number;
  /** The agent service's turns: the agent whose answer it is (and `turn-done` carries the cost). */
  agentId?: string;
  /** The turn's totals before this call. */
  totals: TurnTotals;
}

/** Closes a turn in the transaction of its last model call's settlement (activities/conversations/turn-closer.ts). */
export interface TurnCloser {
  /**
   * Writes the close on `client`: the turn's messages with `answer`, its status and its `turn-done` event at `seq`.
   * Returns what to do once the transaction has committed (the event to the waiting response, metrics).
   */
  close(
    client: PoolClient,
    closing: TurnClosing,
    call: { candidate: Candidate; usage: Usage; metered: boolean; answer: string | null; seq: number },
  ): Promise<() => void>;
}

export type ProviderCallOutcome = (
  | {
      outcome: 'succeeded';
      latencyMs: number;
      finishReason: FinishReason;
      usage: Usage;
      usageEstimated: boolean;
      /** Null when streamed (unless `collectMessage`): the text went to the client and the journal. */
      message: CompletionMessage | null;
      /** The sequence number after this call's last stream event. */
      nextSeq?: number;
      /** A person stopped the turn during the call: the message is what was streamed, without tool calls. */
      stopped?: boolean;
      /** The call closed its turn (ProviderCallInput.closeTurn): the turn's last event is written. */
      turnClosed?: boolean;
      /** The call wrote its Response's end (ProviderCallInput.closeResponse). */
      responseClosed?: boolean;
      /** A non-streamed answer's time upstream, for the waiting request (ms). */
      upstreamMs?: number;
      /**
       * The stream's last events, which the database did not take when the call ended (an outage): the workflow
       * writes them once it answers (workflows/model-call.ts). The call's settlement and closes were not written.
       */
      journalTail?: SequencedStreamEvent[];
    }
  | {
      outcome: 'skipped';
      reason: string;
      insufficientCredits?: boolean;
      /** Skipped for the provider's rate limit reserve: seconds until its window resets. */
      retryAfterSeconds?: number;
    }
  | {
      outcome: 'failed';
      error: ProviderError;
      contentSent: boolean;
      latencyMs: number;
      /** When content was streamed: the sequence number after the last event sent (its in-band error). */
      nextSeq?: number;
    }
) & {
  /**
   * The attempt's credits are settled (success) or its hold released (otherwise) already. The call does
   * this itself, right after the answer left, to spare the workflow a step; when it could not, the
   * workflow's saga activity does it, durably.
   */
  ledgerDone?: boolean;
};

export interface ProviderCallDependencies {
  catalogue: LoadedCatalogue;
  breaker: CircuitBreaker;
  hub: StreamHub;
  journal: StreamJournal;
  providerTimeouts?: { connectTimeoutMs?: number; idleTimeoutMs?: number; requestTimeoutMs?: number };
  ledger: CreditLedger;
  /** Where a stoppable call hears that its turn was stopped. */
  stops?: TurnStops;
  /** Closes a chat turn with its last model call (ProviderCallInput.closeTurn); without it, the turn closes itself. */
  turnCloser?: TurnCloser;
  /** Writes a Response's end with its call (ProviderCallInput.closeResponse); without it, the workflow does. */
  responses?: ResponseCloser;
  /** Told every attempt's outcome (metrics). */
  observe?: (provider: string, outcome: ProviderCallOutcome['outcome']) => void;
  /** When traces are exported (process/tracing.ts): a span per call (activities/model-call-spans.ts). */
  tracing?: ModelCallTracing | null;
  /** What each provider's limits leave, heard on its answers (ProviderCallInput.reserve). */
  headroom?: ProviderHeadroom;
}

interface InFlight {
  outcome: Promise<ProviderCallOutcome>;
  abort: AbortController;
  timer: NodeJS.Timeout;
}

/** How long an unadopted speculative call is kept before it is aborted and forgotten. */
const adoptionWindowMs = 30_000;

export class ProviderCalls {
  private readonly dependencies: ProviderCallDependencies;
  private readonly adapters = new Map<string, ProviderAdapter>();
  private readonly inFlight = new Map<string, InFlight>();

  constructor(dependencies: ProviderCallDependencies) {
    this.dependencies = dependencies;
  }

  /** Starts a call that a local activity of this process is expected to adopt. */
  startSpeculative(input: ProviderCallInput): Promise<ProviderCallOutcome> {
    const key = `${input.requestId}#${input.attempt}`;
    const abort = new AbortController();
    const outcome = this.run(input, abort.signal);
    const timer = setTimeout(() => this.discard(input.requestId, input.attempt), adoptionWindowMs);
    timer.unref();
    this.inFlight.set(key, { outcome, abort, timer });
    return outcome;
  }

  /** Speculative calls not yet adopted or discarded. */
  get pendingSpeculative(): number {
    return this.inFlight.size;
  }

  /** Aborts and forgets a speculative call (its workflow runs in another process). */
  discard(requestId: string, attempt: number): void {
    const key = `${requestId}#${attempt}`;
    const call = this.inFlight.get(key);
    if (!call) return;
    this.inFlight.delete(key);
    clearTimeout(call.timer);
    call.abort.abort();
  }

  /** The outcome of this attempt: the speculative call in flight when there is one, else a new call. */
  callOrAdopt(input: ProviderCallInput, signal: AbortSignal): Promise<ProviderCallOutcome> {
    const key = `${input.requestId}#${input.attempt}`;
    const speculative = this.inFlight.get(key);
    if (speculative) {
      this.inFlight.delete(key);
      clearTimeout(speculative.timer);
      signal.addEventListener('abort', () => speculative.abort.abort(), { once: true });
      return speculative.outcome;
    }
    return this.run(input, signal);
  }

  private adapterFor(endpoint: ProviderEndpoint): ProviderAdapter {
    let adapter = this.adapters.get(endpoint.provider);
    if (!adapter) {
      adapter = createProviderAdapter({ ...endpoint, ...this.dependencies.providerTimeouts });
      this.adapters.set(endpoint.provider, adapter);
    }
    return adapter;
  }

  /** The call, in a span of its own when traces are exported. */
  private run(input: ProviderCallInput, signal: AbortSignal): Promise<ProviderCallOutcome> {
    const tracing = this.dependencies.tracing;
    if (!tracing) return this.call(input, signal);
    const span = startModelCallSpan(tracing, input);
    return this.call(input, signal).then(
      (outcome) => {
        span.end(outcome);
        return outcome;
      },
      (error: unknown) => {
        span.fail(error);
        throw error;
      },
    );
  }

  private async call(input: ProviderCallInput, signal: AbortSignal): Promise<ProviderCallOutcome> {
    const { headroom } = this.dependencies;
    const tokens = headroom ? estimatedTokens(input.request) : 0;
    const yielded = this.yieldsToReserve(input, tokens);
    // Counted in flight from the moment it may go (before its hold is taken), so that calls deciding meanwhile see it.
    const ended = yielded ? undefined : headroom?.started(input.candidate.provider, tokens);
    // A streamed attempt leaves its journal writer open: its last batch is written with the settlement, in one
    // transaction (for an answer shorter than the flush interval, the call's only write).
    const journal: { writer?: JournalWriter } = {};
    let outcome: ProviderCallOutcome;
    try {
      const reserved = yielded ?? (await this.reserve(input));
      outcome = reserved ?? (await this.attempt(input, signal, journal));
    } finally {
      ended?.();
    }
    try {
      const closed = await this.closeLedger(input, outcome, journal.writer);
      outcome.ledgerDone = closed.ledgerDone;
      if (closed.turnClosed && outcome.outcome === 'succeeded') outcome.turnClosed = true;
      if (closed.responseClosed && outcome.outcome === 'succeeded') outcome.responseClosed = true;
      if (input.closeResponse && !input.request.stream && outcome.outcome === 'succeeded' && outcome.message) {
        // Held until the response's end was written with the settlement (or the workflow will write it).
        this.releaseAnswer(input, outcome, outcome.message);
      }
    } catch (error) {
      outcome.ledgerDone = false;
      if (error instanceof JournalUnreachable && outcome.outcome === 'succeeded' && fitsHistory(error.unwritten)) {
        // The database is out, but the answer is whole: it is not lost, and not asked for again. Its last events go
        // to the workflow's history, which journals them once the database answers, then settles.
        outcome.journalTail = error.unwritten;
      } else {
        // The journal failed otherwise (or the rest is too big to hand over): the attempt fails as a network failure
        // would (the hold is left to the workflow's saga).
        outcome = journalFailure(input, outcome, error);
        outcome.ledgerDone = false;
      }
    }
    this.dependencies.observe?.(input.candidate.provider, outcome.outcome);
    if (outcome.outcome !== 'succeeded') {
      this.dependencies.hub.publish(input.requestId, {
        seq: -1,
        event: { type: 'attempt-ended', outcome: outcome.outcome },
      });
    }
    return outcome;
  }

  /** Hands a non-streamed answer to the request waiting for it in this process (the stream hub's `completion`). */
  private releaseAnswer(
    input: ProviderCallInput,
    answered: Pick<ProviderCallOutcome & { outcome: 'succeeded' }, 'finishReason' | 'usage' | 'usageEstimated'> & {
      upstreamMs?: number;
      latencyMs: number;
    },
    message: CompletionMessage,
  ): void {
    this.dependencies.hub.publish(input.requestId, {
      seq: -1,
      event: {
        type: 'completion',
        model: input.candidate.model,
        message,
        finishReason: answered.finishReason,
        usage: answered.usage,
        usageEstimated: answered.usageEstimated,
        upstreamMs: answered.upstreamMs ?? answered.latencyMs,
      },
    });
  }

  /**
   * Work nobody waits on (`reserve`) skips a provider whose stated limits are down to the reserve kept for requests
   * someone waits on (activities/routing/provider-headroom.ts), before anything is held: the outcome that skips it,
   * with the seconds until its window resets, or null to go on.
   */
  private yieldsToReserve(input: ProviderCallInput, tokens: number): ProviderCallOutcome | null {
    const { headroom } = this.dependencies;
    if (!headroom || input.reserve === undefined) return null;
    const { provider } = input.candidate;
    const short = headroom.shortUntil(provider, input.reserve, tokens);
    if (short === null) return null;
    return {
      outcome: 'skipped',
      reason: `rate limit reserve: ${provider}'s limits are down to what is kept for requests someone waits on, until ${new Date(short).toISOString()}`,
      retryAfterSeconds: Math.max(1, Math.ceil((short - Date.now()) / 1000)),
    };
  }

  /**
   * Holds a failover attempt's worst case before its upstream call, at this candidate's rate: the budget is
   * re-checked for every model tried. Returns the outcome that ends the attempt early, or null to go on.
   */
  private async reserve(input: ProviderCallInput): Promise<ProviderCallOutcome | null> {
    const { candidate } = input;
    // The held attempt (attempt 1, unless the turn says otherwise) was reserved before the call was made.
    if (input.attempt === (input.heldAttempt ?? 1) || !input.metered || !input.userId) return null;
    if (candidate.creditRate === undefined) return null;
    const amount = worstCaseCredits(input.request, candidate.creditRate);
    const reservation = await this.dependencies.ledger.reserve({
      userId: input.userId,
      workflowId: ledgerWorkflowId(input),
      attempt: input.attempt,
      amount,
      model: candidate.model,
    });
    if (reservation.ok) return null;
    return {
      outcome: 'skipped',
      insufficientCredits: true,
      reason: `insufficient credits for ${candidate.model}: needs up to ${amount}, ${reservation.available} available`,
    };
  }

  /**
   * Settles or releases the attempt's credits, with the journal's last batch when the attempt streamed, and closes
   * the turn when the answer ends it (`closeTurn`), all in one transaction. `ledgerDone` is false when metered and the
   * ledger write failed (the journal is written regardless), `turnClosed` false when the turn was not closed (the
   * turn's workflow then closes it). Throws when the journal failed.
   */
  private async closeLedger(
    input: ProviderCallInput,
    outcome: ProviderCallOutcome,
    writer: JournalWriter | undefined,
  ): Promise<{ ledgerDone: boolean; turnClosed: boolean; responseClosed: boolean }> {
    const write = this.ledgerWrite(input, outcome);
    const closeTurn = this.turnClosing(input, outcome);
    const closeResponse = this.responseClosing(input, outcome);
    if (closeResponse && !closeTurn && !writer) {
      // Nothing journalled (a non-streamed answer): the settlement and the Response's end in one statement, or the
      // end alone when nothing is charged. When it fails, the workflow writes both (its saga, then its own record).
      try {
        await closeResponse.alone(write?.settlement);
        return { ledgerDone: true, turnClosed: false, responseClosed: true };
      } catch {
        return { ledgerDone: !write, turnClosed: false, responseClosed: false };
      }
    }
    if (closeTurn || closeResponse) {
      const closed = await this.closeWith(input, writer, async (client) => {
        await write?.(client);
        if (closeResponse) await closeResponse.on(client);
        return closeTurn ? closeTurn(client) : () => undefined;
      });
      if (closed) return { ledgerDone: true, turnClosed: !!closeTurn, responseClosed: !!closeResponse };
      // The close failed, and the settlement with it: the batch was written alone (the writer is closed); the
      // settlement is tried alone below, and the turn (or the response's workflow) closes itself.
      writer = undefined;
    }
    const none = { turnClosed: false, responseClosed: false };
    if (!write) {
      await writer?.close();
      return { ledgerDone: true, ...none };
    }
    if (writer) {
      try {
        await writer.close(write);
        return { ledgerDone: true, ...none };
      } catch (error) {
        if (error instanceof AlongsideFailed) return { ledgerDone: false, ...none };
        throw error;
      }
    }
    try {
      await write();
      return { ledgerDone: true, ...none };
    } catch {
      return { ledgerDone: false, ...none };
    }
  }

  /** The Response's end, when this attempt answers it (succeeded, or stopped by a cancel) and a closer is here. */
  private responseClosing(
    input: ProviderCallInput,
    outcome: ProviderCallOutcome,
  ): {
    /** In the caller's transaction. */
    on(client: PoolClient): Promise<void>;
    /** On its own: riding in the settlement's statement when there is one, else alone. */
    alone(settlement?: Settlement): Promise<void>;
  } | null {
    const closing = input.closeResponse;
    const closer = this.dependencies.responses;
    if (!closing || !closer || outcome.outcome !== 'succeeded') return null;
    const end: ResponseEnd = {
      responseId: closing.responseId,
      outcome: 'answered',
      model: input.candidate.model,
      message: outcome.message,
      finishReason: outcome.finishReason,
      usage: outcome.usage,
      stopped: !!outcome.stopped,
    };
    return {
      on: (client) => closer.finish(end, client),
      alone: (settlement) =>
        settlement
          ? this.dependencies.ledger.settle(settlement, undefined, closer.settledEnd(end))
          : closer.finish(end),
    };
  }

  /** The attempt's ledger write: its settlement when it succeeded, else the release of its hold; null when unmetered. */
  private ledgerWrite(
    input: ProviderCallInput,
    outcome: ProviderCallOutcome,
  ): (((on?: PoolClient) => Promise<void>) & { settlement?: Settlement }) | null {
    const { candidate } = input;
    const creditRate = candidate.creditRate;
    if (!input.metered || !input.userId || creditRate === undefined) return null;
    const { ledger } = this.dependencies;
    const key = { userId: input.userId, workflowId: ledgerWorkflowId(input), attempt: input.attempt };
    if (outcome.outcome !== 'succeeded') return (on) => ledger.release(key, on).then(() => undefined);
    const settlement: Settlement = {
      ...key,
      amount: creditsFor(outcome.usage.total_tokens, creditRate),
      model: candidate.model,
      promptTokens: outcome.usage.prompt_tokens,
      completionTokens: outcome.usage.completion_tokens,
      estimated: outcome.usageEstimated,
    };
    return Object.assign((on?: PoolClient) => ledger.settle(settlement, on), { settlement });
  }

  /**
   * The turn's close, when this attempt's answer ends its turn: it succeeded, was not stopped, and asks for no tool
   * among those the call offered (the workflow runs none otherwise: it would then close the turn itself).
   */
  private turnClosing(
    input: ProviderCallInput,
    outcome: ProviderCallOutcome,
  ): ((client: PoolClient) => Promise<() => void>) | null {
    const closing = input.closeTurn;
    const closer = this.dependencies.turnCloser;
    if (!closing || !closer || outcome.outcome !== 'succeeded' || outcome.stopped || !outcome.message) return null;
    if (input.request.tools?.length && outcome.message.toolCalls.length > 0) return null;
    if (outcome.nextSeq === undefined) return null;
    const call = {
      candidate: input.candidate,
      usage: outcome.usage,
      metered: !!input.metered,
      answer: outcome.message.content,
      seq: outcome.nextSeq,
    };
    return (client) => closer.close(client, closing, call);
  }

  /**
   * Runs `alongside` (which closes the turn) in one transaction with the journal's last batch (a writer with nothing
   * left, when the answer came from the journal); then what the close does after its commit. False when the
   * transaction failed (the batch is then written alone).
   */
  private async closeWith(
    input: ProviderCallInput,
    writer: JournalWriter | undefined,
    alongside: (client: PoolClient) => Promise<() => void>,
  ): Promise<boolean> {
    let afterCommit: (() => void) | undefined;
    try {
      await (writer ?? this.dependencies.journal.writer(input.requestId)).close(async (client) => {
        afterCommit = await alongside(client);
      });
    } catch (error) {
      if (error instanceof AlongsideFailed) return false;
      throw error;
    }
    afterCommit?.();
    return true;
  }

  private async attempt(
    input: ProviderCallInput,
    signal: AbortSignal,
    journalHolder: { writer?: JournalWriter },
  ): Promise<ProviderCallOutcome> {
    const { candidate, request } = input;
    const { catalogue, breaker } = this.dependencies;
    const endpoint = catalogue.endpoints.get(candidate.provider);
    if (!endpoint) return { outcome: 'skipped', reason: `provider ${candidate.provider} has no key` };
    if (candidate.probe && !(await breaker.claimProbe(candidate.provider))) {
      return { outcome: 'skipped', reason: 'circuit open; another replica holds the half-open probe' };
    }
    const { headroom } = this.dependencies;
    const adapter = this.adapterFor(endpoint);
    const providerRequest = toProviderRequest(candidate, request, takesReasoningEffort(catalogue, candidate, endpoint));
    const onHeaders = headroom
      ? (headers: Headers) => headroom.heard(candidate.provider, readRateLimits(endpoint.protocol, headers))
      : undefined;
    return this.callAdapter(input, signal, journalHolder, adapter, providerRequest, onHeaders);
  }

  /** The attempt's call of its provider, streamed or not, once it may go (`attempt`). */
  private async callAdapter(
    input: ProviderCallInput,
    signal: AbortSignal,
    journalHolder: { writer?: JournalWriter },
    adapter: ProviderAdapter,
    providerRequest: ProviderRequest,
    onHeaders: ((headers: Headers) => void) | undefined,
  ): Promise<ProviderCallOutcome> {
    const { candidate, request, requestId } = input;
    const { breaker, hub, journal } = this.dependencies;
    // The writer a streamed attempt opens: closed by `run`, with the settlement.
    const opened = journalHolder;
    const startedAt = performance.now();
    let contentSent = false;
    let seq = input.seqBase ?? 0;
    try {
      if (!request.stream) {
        const response = await adapter.generate(providerRequest, { signal, onHeaders });
        await breaker.recordSuccess(candidate.provider);
        // Reasoning is generated, and billed, like the answer: an estimate counts it too.
        const generatedTokens =
          countTokens(response.reasoning ?? '') +
          countTokens(response.content ?? '') +
          countToolCallTokens(response.toolCalls);
        const usage = response.usage ?? estimateUsage(request, generatedTokens);
        const message: CompletionMessage = {
          content: response.content,
          toolCalls: response.toolCalls,
          ...(response.reasoning === undefined ? {} : { reasoning: response.reasoning }),
          ...(response.stopSequence ? { stopSequence: response.stopSequence } : {}),
        };
        const answered = {
          outcome: 'succeeded' as const,
          latencyMs: elapsed(startedAt),
          finishReason: response.finishReason,
          usage,
          usageEstimated: !response.usage,
          message,
          upstreamMs: performance.now() - startedAt,
        };
        // A response waiting in this process may be released now (a Response's, once its end is written: `call`);
        // the workflow records the same outcome.
        if (!input.closeResponse) this.releaseAnswer(input, answered, message);
        return answered;
      }

      if (input.collectMessage) {
        // A chat turn's call re-executed after its worker died: when the journal holds this call's whole answer,
        // that answer is the outcome (the same tool call ids, text and usage), and the provider is not called
        // again. The ledger's settlement is keyed by attempt, so it stays one.
        const recorded = await recordedAnswer(journal, requestId, input.seqBase ?? 0, candidate.model);
        if (recorded) return { ...recorded, latencyMs: elapsed(startedAt) };
      }
      const writer = journal.writer(requestId);
      opened.writer = writer;
      for (const event of input.journalFirst ?? []) writer.append(event);
      seq = input.seqBase ?? 0;
      const collected = input.collectMessage ? new MessageAssembler() : null;
      const emit = (event: StreamEvent) => {
        const sequenced = { seq: seq++, event };
        hub.publish(requestId, sequenced);
        writer.append(sequenced);
      };
      let finishReason: FinishReason = 'stop';
      let stopSequence: string | undefined;
      let usage: Usage | null = null;
      let completionText = '';
      const stop = input.stoppable ? this.dependencies.stops?.watch(ledgerWorkflowId(input)) : undefined;
      /** The call stopped by a person: what was streamed is the answer, its usage estimated and settled. */
      const stopped = (asked = true): ProviderCallOutcome => {
        const estimated = asked
          ? estimateUsage(request, countTokens(completionText))
          : { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
        if (contentSent) emit({ type: 'usage', usage: estimated });
        return {
          outcome: 'succeeded',
          latencyMs: elapsed(startedAt),
          finishReason: 'stop',
          usage: estimated,
          usageEstimated: true,
          message: collected ? { content: collected.message().content ?? '', toolCalls: [] } : null,
          nextSeq: seq,
          stopped: true,
        };
      };
      if (stop?.signal.aborted) {
        stop.release();
        // Stopped before the provider was asked: nothing was generated, and nothing is billed.
        return stopped(false);
      }
      try {
        const streamSignal = stop ? AbortSignal.any([signal, stop.signal]) : signal;
        for await (const part of adapter.stream(providerRequest, { signal: streamSignal, onHeaders })) {
          if (part.type === 'usage') {
            usage = part.usage;
            continue;
          }
          if (part.type === 'finish') {
            finishReason = part.reason;
            stopSequence = part.stopSequence;
          }
          // Reasoning counts for an estimate (it is generated output), never for the collected message.
          if (part.type === 'text-delta' || part.type === 'reasoning-delta') completionText += part.text;
          if (part.type === 'tool-call-delta') completionText += (part.name ?? '') + part.argumentsDelta;
          collected?.add(part);
          if (!contentSent) {
            // Announced with the first content, so a failure before it fails over silently.
            emit({ type: 'model', model: candidate.model });
            contentSent = true;
          }
          emit(part);
        }
        // An adapter may end its stream quietly when aborted: a stop is then seen here.
        if (stop?.signal.aborted && !usage) return stopped();
        const finalUsage = usage ?? estimateUsage(request, countTokens(completionText));
        emit({ type: 'usage', usage: finalUsage });
        await breaker.recordSuccess(candidate.provider);
        const collectedMessage = collected?.message() ?? null;
        const message = collectedMessage && stopSequence ? { ...collectedMessage, stopSequence } : collectedMessage;
        // Stopped after the provider's last part: the answer is whole, but the tool calls it asks for are not run.
        const stoppedLate = !!stop?.signal.aborted;
        return {
          outcome: 'succeeded',
          latencyMs: elapsed(startedAt),
          finishReason,
          usage: finalUsage,
          usageEstimated: !usage,
          message: message && stoppedLate ? { ...message, toolCalls: [] } : message,
          nextSeq: seq,
          ...(stoppedLate ? { stopped: true } : {}),
        };
      } catch (error) {
        if (stop?.signal.aborted && !signal.aborted) return stopped();
        if (contentSent) {
          const message = error instanceof Error ? error.message : String(error);
          emit({
            type: 'error',
            errorType: 'upstream_error',
            message: `${candidate.provider}: stream interrupted: ${message}`,
          });
        }
        throw error;
      } finally {
        stop?.release();
      }
    } catch (error) {
      const providerError =
        error instanceof ProviderError
          ? error
          : new ProviderError({ provider: candidate.provider, kind: 'network', message: String(error) });
      if (providerError.retryable) await breaker.recordFailure(candidate.provider, providerError.message);
      else if (candidate.probe) await breaker.recordSuccess(candidate.provider);
      return {
        outcome: 'failed',
        error: providerError,
        contentSent,
        latencyMs: elapsed(startedAt),
        ...(contentSent ? { nextSeq: seq } : {}),
      };
    }
  }
}

/**
 * An attempt whose journal could not take its last events (the database refused or was gone): it fails as a network
 * failure would, with what it sent counted as sent (a stream already delivered to the client ends in an in-band
 * error after it, at the position after its last event).
 */
function journalFailure(input: ProviderCallInput, outcome: ProviderCallOutcome, error: unknown): ProviderCallOutcome {
  const message = `the stream journal failed: ${error instanceof Error ? error.message : String(error)}`;
  const contentSent = outcome.outcome === 'succeeded' || (outcome.outcome === 'failed' && outcome.contentSent);
  const nextSeq = outcome.outcome === 'skipped' ? undefined : outcome.nextSeq;
  return {
    outcome: 'failed',
    error: new ProviderError({ provider: input.candidate.provider, kind: 'network', message }),
    contentSent,
    latencyMs: outcome.outcome === 'skipped' ? 0 : outcome.latencyMs,
    ...(contentSent && nextSeq !== undefined ? { nextSeq } : {}),
  };
}

/**
 * Whether the events a closing writer could not write may go to the workflow in the attempt's result: under 1 MiB of
 * JSON, well within Temporal's payload limit (2 MB by default). An answer of over about 20,000 tokens not yet
 * journalled when the database went out still fails its attempt.
 */
function fitsHistory(events: SequencedStreamEvent[]): boolean {
  let bytes = 0;
  for (const item of events) {
    bytes += JSON.stringify(item.event).length + 16;
    if (bytes > 1 << 20) return false;
  }
  return true;
}

/** An attempt's settlement as the ledger takes it. */
type Settlement = Parameters<CreditLedger['settle']>[0];

/** The ledger's key base of an attempt: the workflow that made it. */
function ledgerWorkflowId(input: ProviderCallInput): string {
  return input.workflowId ?? completionWorkflowId(input.requestId);
}

/** Puts a streamed answer back together: its text, and its tool calls from their fragments (never its reasoning). */
class MessageAssembler {
  private text = '';
  private readonly calls = new Map<number, { id: string; name: string; arguments: string }>();

  add(part: StreamPart): void {
    if (part.type === 'text-delta') this.text += part.text;
    if (part.type !== 'tool-call-delta') return;
    const call = this.calls.get(part.index) ?? { id: '', name: '', arguments: '' };
    if (part.id) call.id = part.id;
    if (part.name) call.name = part.name;
    call.arguments += part.argumentsDelta;
    this.calls.set(part.index, call);
  }

  message(): CompletionMessage {
    return {
      content: this.text === '' && this.calls.size > 0 ? null : this.text,
      toolCalls: [...this.calls.entries()]
        .sort(([a], [b]) => a - b)
        .map(([index, call]) => ({
          id: call.id || `call_${index}`,
          type: 'function' as const,
          function: { name: call.name, arguments: call.arguments },
        })),
    };
  }
}

/**
 * A streamed call's answer as the journal recorded it from position `seqBase`: the model's announcement, its parts,
 * and the usage event that ends a call that succeeded. Null when the recording is missing or incomplete (the call
 * was cut off, or failed), or belongs to another model.
 */
async function recordedAnswer(
  journal: StreamJournal,
  requestId: string,
  seqBase: number,
  model: string,
): Promise<Omit<Extract<ProviderCallOutcome, { outcome: 'succeeded' }>, 'latencyMs'> | null> {
  const events = await journal.read(requestId, seqBase - 1);
  const first = events[0];
  if (first?.seq !== seqBase || first.event.type !== 'model' || first.event.model !== model) return null;
  const assembler = new MessageAssembler();
  let finishReason: FinishReason = 'stop';
  for (const [index, item] of events.entries()) {
    if (item.seq !== seqBase + index) return null;
    const event = item.event;
    if (event.type === 'usage') {
      return {
        outcome: 'succeeded',
        finishReason,
        usage: event.usage,
        usageEstimated: false,
        message: assembler.message(),
        nextSeq: item.seq + 1,
      };
    }
    if (event.type === 'finish') finishReason = event.reason;
    if (event.type === 'text-delta' || event.type === 'tool-call-delta') assembler.add(event);
    if (event.type === 'error' || (index > 0 && event.type === 'model')) return null;
  }
  return null;
}

function elapsed(startedAt: number): number {
  return Math.round(performance.now() - startedAt);
}

/**
 * Whether the upstream gets the request's reasoning_effort. OpenAI-compatible servers reject it for a model that
 * does not reason (OpenAI: "Unsupported parameter"), and a failover may land on one, so there it goes only to
 * catalogue models marked `reasoning`. The Anthropic and Gemini adapters turn it into their own thinking
 * switches, which every catalogued model of theirs accepts.
 */
function takesReasoningEffort(catalogue: LoadedCatalogue, candidate: Candidate, endpoint: ProviderEndpoint): boolean {
  if (endpoint.protocol !== 'openai') return true;
  const resolved = resolveModel(catalogue.catalogue, candidate.modelId ?? candidate.model);
  return resolved?.model.capabilities.includes('reasoning') ?? false;
}

function toProviderRequest(
  candidate: Candidate,
  request: ChatCompletionRequest,
  withReasoningEffort: boolean,
): ProviderRequest {
  return {
    model: candidate.upstreamModel,
    messages: request.messages,
    tools: request.tools ?? undefined,
    toolChoice: request.tool_choice ?? undefined,
    maxTokens: request.max_completion_tokens ?? request.max_tokens ?? undefined,
    temperature: request.temperature ?? undefined,
    topP: request.top_p ?? undefined,
    topK: request.top_k ?? undefined,
    stop: typeof request.stop === 'string' ? [request.stop] : (request.stop ?? undefined),
    seed: request.seed ?? undefined,
    user: request.user ?? undefined,
    responseFormat: request.response_format ?? undefined,
    presencePenalty: request.presence_penalty ?? undefined,
    frequencyPenalty: request.frequency_penalty ?? undefined,
    parallelToolCalls: request.parallel_tool_calls ?? undefined,
    reasoningEffort: withReasoningEffort ? (request.reasoning_effort ?? undefined) : undefined,
  };
}

/**
 * A call's tokens at most, roughly (its text at four characters a token, and the most it may generate): what it may
 * take of a provider's token limit while in flight. Rough on purpose: it is asked of every call, and the tokenizer is
 * not cheap.
 */
function estimatedTokens(request: ChatCompletionRequest): number {
  let characters = 0;
  for (const message of request.messages) {
    if (typeof message.content === 'string') characters += message.content.length;
    else if (Array.isArray(message.content))
      for (const part of message.content) if (part.type === 'text') characters += part.text.length;
  }
  return Math.ceil(characters / 4) + (request.max_completion_tokens ?? request.max_tokens ?? 0);
}

/** Usage counted with the tokenizer when a provider reports none (billed as estimated). */
function estimateUsage(request: ChatCompletionRequest, completionTokens: number): Usage {
  const prompt = countPromptTokens(request.messages);
  return { prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens };
}
