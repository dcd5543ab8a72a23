/**
 * Embeddings as a library: the one path `POST /v1/embeddings`, RAG indexing and RAG search go through, so every
 * embedding is routed, failed over, metered and traced alike. It lives in activities/ so both the API process (the
 * route, services) and activities (RAG indexing) can call it: the API and the worker build one each
 * (`createEmbeddingService`), on a Temporal client that shares the process's worker connection.
 *
 * Library use (RAG):
 *
 *   const { vectors, model, dimensions, usage } = await embeddings.embed({
 *     userId,              // the account charged; its plan decides the models it may use
 *     texts,               // 1 to EMBEDDING_MAX_INPUTS non-empty texts
 *     model,               // optional: default `defaultModel()` — pin it per index and pass it on every search
 *     dimensions,          // optional: shorter vectors, for models that take it
 *   });
 *   // vectors: Float32Array[] (one per text, in order, each of length 1: cosine similarity is a dot product)
 *
 * It throws `EmbeddingError` (type = the API's error type: invalid_request, model_not_found, permission_denied,
 * insufficient_credits, upstream_error, …). Each call is a workflow `embedding-<id>` (TesseraKind `embedding`) started
 * eagerly in this process: the plan is its input, every provider attempt a local activity that holds and settles its
 * credits; the vectors come back in memory (or, when the workflow ran on another worker, through the stream journal),
 * never through workflow history.
 */
import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { Catalogue, EmbeddingModel } from '../../common/catalogue.ts';
import type { CompletionFailureDetails, Attempt } from '../../common/completion.ts';
import { creditsFor } from '../../common/credits.ts';
import {
  embeddingWorkflowId,
  type EmbeddingInput,
  type EmbeddingResult,
  type EmbeddingUsage,
  type EmbedTextsWorkflow,
} from '../../common/embeddings.ts';
import { errorStatus, type ErrorType } from '../../common/errors.ts';
import type { PlanName, PlansFile } from '../../common/plans.ts';
import type { CircuitBreaker } from '../routing/circuit-breaker.ts';
import { kindKey, modelKey, userKey } from '../../common/search-attributes.ts';
import type { Pool } from '../../db/pool.ts';
import type { LoadedCatalogue } from '../../config/load-catalogue.ts';
import type { Settings } from '../../config/settings.ts';
import type { CreditLedger, Reservation, ReservationOutcome } from '../credits/credit-ledger.ts';
import { countTokens } from '../credits/tokens.ts';
import { defaultEmbeddingModel, Router, type RoutingAccount } from '../routing/router.ts';
import type { StreamJournal } from '../streaming/stream-journal.ts';
import { settleAttempt } from '../completion-activities.ts';
import { embedWithFailover } from '../../common/embedding-failover.ts';
import { attemptResult } from './embedding-activities.ts';
import {
  vectorsFromJournal,
  type EmbeddingCalls,
  type EmbeddingHandover,
  type HandedEmbeddings,
} from './embedding-calls.ts';

/** How long a query's attempt may take when run directly (a search waits for it; the workflow's bound is 10 min). */
const directTimeoutMs = 60_000;

/** A refused or failed embedding request; `type` is the API's error type (common/errors.ts). */
export class EmbeddingError extends Error {
  readonly type: ErrorType;
  readonly param: string | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly requiredPlan: string | undefined;
  constructor(
    type: ErrorType,
    message: string,
    options: { param?: string; retryAfterSeconds?: number; requiredPlan?: string } = {},
  ) {
    super(message);
    this.name = 'EmbeddingError';
    this.type = type;
    this.param = options.param;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.requiredPlan = options.requiredPlan;
  }
}

export interface EmbedRequest {
  /** The account charged; its plan (or operator-set model list) decides which models it may use. */
  userId: string;
  /** An embedding model id; default: `defaultModel()`. */
  model?: string;
  texts: string[];
  /** Shorter vectors than the model's own (models that take it only). */
  dimensions?: number;
  /**
   * Other models that may serve when every provider of `model` fails. Their vectors are not comparable with
   * `model`'s: only a caller that stores the serving model with each vector should name any (RAG does not).
   */
  fallbackModels?: string[];
  /** OpenAI's end-user id, passed to providers that take it. */
  user?: string;
}

export interface Embedded {
  requestId: string;
  /** The model that served: the requested one unless a fallback model had to. */
  model: string;
  provider: string;
  dimensions: number;
  /** One per text, in order, each of length 1. */
  vectors: Float32Array[];
  usage: EmbeddingUsage;
  /** The provider reported no usage; the gateway's token count was billed. */
  usageEstimated: boolean;
}

/** Who asks: an account (metered, limited to its plan's models) or the operator (neither). */
/**
 * An embedding run here (as `direct`) under an id its caller chose, so that a retry holds and charges under the same
 * ledger keys (a batch's line), at `creditFactor` times the models' rates.
 */
export interface DirectRun {
  requestId: string;
  creditFactor?: number;
}

export interface EmbeddingCaller {
  userId: string;
  metered: boolean;
  account: RoutingAccount | null;
}

export interface EmbeddingServiceDependencies {
  client: Client;
  taskQueue: string;
  router: Router;
  catalogue: Catalogue;
  ledger: CreditLedger;
  handover: EmbeddingHandover;
  journal: StreamJournal;
  pool: Pool;
  limits: { maxInputs: number; maxTokens: number };
  /** EMBEDDING_MODEL: the model of callers that name none (see Router.defaultEmbeddingModel). */
  defaultModel?: string;
  /** The process's embedding attempts: `embedQuery` runs them itself. */
  calls?: EmbeddingCalls;
}

export class EmbeddingService {
  private readonly dependencies: EmbeddingServiceDependencies;
  private readonly fallback: EmbeddingModel;

  constructor(dependencies: EmbeddingServiceDependencies) {
    this.dependencies = dependencies;
    const fallback = defaultEmbeddingModel(dependencies.catalogue, dependencies.defaultModel);
    if (!fallback) {
      throw new Error(
        dependencies.defaultModel
          ? `EMBEDDING_MODEL names no embedding model of the catalogue: ${dependencies.defaultModel}`
          : 'the catalogue has no embedding model that can serve (add local-embedding to embedding_models)',
      );
    }
    this.fallback = fallback;
  }

  /** The model used when a caller names none, and the length of its vectors (null: as its server answers). */
  defaultModel(): { id: string; dimensions: number | null } {
    return { id: this.fallback.id, dimensions: this.fallback.dimensions };
  }

  /** Embeds texts for an account (the library entry: RAG indexing); see the file comment. */
  async embed(request: EmbedRequest): Promise<Embedded> {
    return this.run(await this.accountOf(request.userId), request, this.holdOnly);
  }

  /**
   * Embeds a search query for an account: the same plan, limits, hold, failover and settlement as `embed`
   * (common/embedding-failover.ts), run here rather than as a workflow of its own. A search is a read with nothing to
   * resume, and the agents' `rag_search` runs inside its turn's workflow: a workflow per query cost about 8 ms of the
   * search's ~10 beyond the pgvector query. What is given up: the query's attempts are not a workflow history in the
   * Web UI; should this process die between the hold and the settlement, the stale-hold sweep lifts the hold (no
   * workflow of its id runs) and the query is not charged.
   */
  async embedQuery(request: EmbedRequest): Promise<Embedded> {
    return this.run(await this.accountOf(request.userId), request, this.holdOnly, 'direct');
  }

  private readonly holdOnly = (reservation: Reservation | null) =>
    reservation ? this.dependencies.ledger.reserve(reservation) : Promise.resolve(null);

  private async accountOf(userId: string): Promise<EmbeddingCaller> {
    const { rows } = await this.dependencies.pool.query<{
      plan: PlanName;
      custom_limits: { models?: string[] | 'all' } | null;
    }>('select plan, custom_limits from users where id = $1', [userId]);
    const row = rows[0];
    if (!row) throw new EmbeddingError('not_found', `No account ${userId}`);
    return { userId, metered: true, account: { plan: row.plan, customModels: row.custom_limits?.models } };
  }

  /**
   * Checks the request against the model and the limits, admits it (`admit` holds attempt 1's credits, and for HTTP
   * counts the rate limits in the same statement), then runs its workflow (or, `direct`, the same steps here) and
   * returns the vectors.
   */
  async run(
    caller: EmbeddingCaller,
    request: EmbedRequest,
    admit: (reservation: Reservation | null) => Promise<ReservationOutcome | null>,
    how: 'workflow' | 'direct' | DirectRun = 'workflow',
  ): Promise<Embedded> {
    const { client, taskQueue, router, ledger, handover, journal } = this.dependencies;
    const requested = request.model ?? this.fallback.id;
    const plan = await router.planEmbedding(requested, request.fallbackModels ?? [], caller.account);
    if (plan.kind === 'model_not_found') {
      const param = plan.model === requested ? 'model' : 'fallback_models';
      throw new EmbeddingError(
        plan.chatModel ? 'invalid_request' : 'model_not_found',
        plan.chatModel
          ? `The model '${plan.model}' is a chat model and has no embeddings; see GET /v1/models?type=embedding`
          : `The embedding model '${plan.model}' does not exist; see GET /v1/models?type=embedding`,
        { param },
      );
    }
    if (plan.kind === 'not_in_plan') {
      const plans = caller.account?.plan ?? '';
      const unlock = plan.requiredPlan ? `; it needs the ${plan.requiredPlan} plan or higher` : '';
      throw new EmbeddingError('permission_denied', `The model '${plan.model}' is not in your ${plans} plan${unlock}`, {
        param: 'model',
        requiredPlan: plan.requiredPlan ?? undefined,
      });
    }
    const { models } = plan;
    const run = typeof how === 'object' ? how : null;
    const candidates = run?.creditFactor
      ? plan.candidates.map((candidate) =>
          candidate.creditRate === undefined
            ? candidate
            : { ...candidate, creditRate: candidate.creditRate * run.creditFactor! },
        )
      : plan.candidates;
    const model = models[0]!;
    const promptTokens = this.checkLimits(request, models);

    const requestId = run?.requestId ?? `emb-${randomBytes(18).toString('base64url')}`;
    const workflowId = embeddingWorkflowId(requestId);
    const created = Math.floor(Date.now() / 1000);
    const first = candidates[0];
    // Attempt 1's hold is taken before anything starts, so a refusal (402, 429) changes nothing.
    const reservation =
      caller.metered && first?.creditRate !== undefined
        ? {
            userId: caller.userId,
            workflowId,
            attempt: 1,
            amount: creditsFor(promptTokens, first.creditRate),
            model: first.model,
          }
        : null;
    const held = await admit(reservation);
    if (reservation && held && !held.ok) {
      throw new EmbeddingError(
        'insufficient_credits',
        `This request costs ${reservation.amount} credits on ${reservation.model}; ${held.available} are available`,
      );
    }
    const input: EmbeddingInput = {
      requestId,
      userId: caller.userId,
      created,
      model: model.id,
      texts: request.texts,
      ...(request.dimensions === undefined ? {} : { dimensions: request.dimensions }),
      ...(request.user === undefined ? {} : { user: request.user }),
      promptTokens,
      candidates,
      metered: caller.metered,
      firstAttemptHeld: reservation !== null,
    };
    const waiting = handover.expect(requestId);
    if (how !== 'workflow') {
      try {
        return await this.runHere(input, workflowId, waiting.answer);
      } finally {
        waiting.cancel();
      }
    }
    try {
      const handle = await client.workflow.start<EmbedTextsWorkflow>('embedTexts', {
        workflowId,
        taskQueue,
        args: [input],
        // The workflow's task (and so the provider call) runs in this process: the vectors need no network hop.
        requestEagerStart: true,
        typedSearchAttributes: [
          { key: kindKey, value: 'embedding' },
          { key: userKey, value: caller.userId },
          { key: modelKey, value: model.id },
        ],
        memo: { created, model: model.id, inputs: request.texts.length },
        staticSummary: `Embeddings: ${request.texts.length} text(s) with ${model.id}, for ${caller.userId}`,
      });
      const result = settle(handle.result());
      const outcome = await Promise.race([waiting.answer.then((handed) => ({ handed })), result]);
      if ('handed' in outcome) return { requestId, ...outcome.handed };
      if (!outcome.ok) throw outcome.error;
      // The workflow ran on another worker: its vectors are in the journal.
      const vectors = await vectorsFromJournal(journal, requestId);
      return answerOf(outcome.value, vectors);
    } catch (error) {
      if (error instanceof EmbeddingError) throw error;
      // The workflow never started (Temporal unreachable): the hold is lifted here, since nothing else will.
      if (reservation) await ledger.release({ userId: caller.userId, workflowId, attempt: 1 }).catch(() => undefined);
      throw error;
    } finally {
      waiting.cancel();
    }
  }

  /** The embedding workflow's steps, called here (`embedQuery`); failures become EmbeddingErrors as the workflow's do. */
  private async runHere(
    input: EmbeddingInput,
    workflowId: string,
    answer: Promise<HandedEmbeddings>,
  ): Promise<Embedded> {
    const { calls, ledger } = this.dependencies;
    if (!calls) throw new Error('EmbeddingService.embedQuery needs the process’s embedding calls');
    const attempts: Attempt[] = [];
    const outcome = await settle(
      embedWithFailover(input, workflowId, attempts, {
        call: async (attempt) => attemptResult(attempt, await calls.run(attempt, AbortSignal.timeout(directTimeoutMs))),
        settle: (settlement) => settleAttempt(ledger, settlement),
        release: async (key) => {
          await ledger.release(key);
        },
      }),
    );
    if (!outcome.ok) throw outcome.error;
    // The serving attempt handed its vectors to this caller before it returned.
    return { requestId: input.requestId, ...(await answer) };
  }

  /** The request's tokens, after checking every limit (each a 400 naming its field); the hold is counted from them. */
  private checkLimits(request: EmbedRequest, models: EmbeddingModel[]): number {
    const { maxInputs, maxTokens } = this.dependencies.limits;
    const { texts, dimensions } = request;
    if (texts.length === 0) throw new EmbeddingError('invalid_request', 'input must not be empty', { param: 'input' });
    if (texts.length > maxInputs) {
      throw new EmbeddingError('invalid_request', `input has ${texts.length} items; at most ${maxInputs} per request`, {
        param: 'input',
      });
    }
    for (const model of models) {
      if (dimensions === undefined || dimensions === model.dimensions) continue;
      if (!model.shortenable) {
        throw new EmbeddingError(
          'invalid_request',
          `The model '${model.id}' does not take dimensions (its vectors have ${model.dimensions ?? 'a fixed number of'} dimensions)`,
          { param: 'dimensions' },
        );
      }
      if (model.dimensions !== null && dimensions > model.dimensions) {
        throw new EmbeddingError(
          'invalid_request',
          `dimensions must be at most ${model.dimensions} for '${model.id}'`,
          { param: 'dimensions' },
        );
      }
    }
    const longest = Math.min(...models.map((model) => model.maxInputTokens));
    let total = 0;
    for (const [index, text] of texts.entries()) {
      if (text.length === 0) {
        throw new EmbeddingError('invalid_request', `input[${index}] is empty`, { param: `input.${index}` });
      }
      const tokens = countTokens(text);
      if (tokens > longest) {
        throw new EmbeddingError(
          'invalid_request',
          `input[${index}] has ${tokens} tokens; the model takes at most ${longest}`,
          { param: `input.${index}` },
        );
      }
      total += tokens;
      if (total > maxTokens) {
        throw new EmbeddingError('invalid_request', `input has more than ${maxTokens} tokens; split the request`, {
          param: 'input',
        });
      }
    }
    return total;
  }
}

function answerOf(result: EmbeddingResult, vectors: Float32Array[]): Embedded {
  return {
    requestId: result.requestId,
    model: result.model,
    provider: result.provider,
    dimensions: result.dimensions,
    vectors,
    usage: result.usage,
    usageEstimated: result.usageEstimated,
  };
}

type Settled = { ok: true; value: EmbeddingResult } | { ok: false; error: EmbeddingError; attempts: Attempt[] };

/** A workflow result as a value or the EmbeddingError its failure means. */
async function settle(result: Promise<EmbeddingResult>): Promise<Settled> {
  try {
    return { ok: true, value: await result };
  } catch (error) {
    let cause: unknown = error instanceof WorkflowFailedError ? error.cause : error;
    while (cause instanceof Error) {
      if (cause instanceof ApplicationFailure && cause.type && cause.type in errorStatus) {
        const details = cause.details?.[0] as CompletionFailureDetails | undefined;
        const failure = new EmbeddingError(cause.type as ErrorType, cause.message, {
          retryAfterSeconds: details?.retryAfterSeconds,
        });
        return { ok: false, error: failure, attempts: details?.attempts ?? [] };
      }
      cause = cause.cause;
    }
    const message = `Embedding failed: ${error instanceof Error ? error.message : String(error)}`;
    return { ok: false, error: new EmbeddingError('internal_error', message), attempts: [] };
  }
}

/** The service of a process (the API's, or a worker's for its activities), on a client sharing its worker connection. */
export function createEmbeddingService(options: {
  client: Client;
  settings: Pick<Settings, 'TEMPORAL_TASK_QUEUE' | 'EMBEDDING_MODEL' | 'EMBEDDING_MAX_INPUTS' | 'EMBEDDING_MAX_TOKENS'>;
  catalogue: LoadedCatalogue;
  dependencies: {
    breaker: CircuitBreaker;
    plans: PlansFile;
    ledger: CreditLedger;
    embeddingHandover: EmbeddingHandover;
    /** Where `embedQuery` runs its attempts (absent: it cannot). */
    embeddingCalls?: EmbeddingCalls;
    journal: StreamJournal;
    pool: Pool;
  };
}): EmbeddingService {
  const { client, settings, catalogue, dependencies } = options;
  return new EmbeddingService({
    client,
    taskQueue: settings.TEMPORAL_TASK_QUEUE,
    router: new Router(catalogue, dependencies.breaker, dependencies.plans),
    catalogue: catalogue.catalogue,
    ledger: dependencies.ledger,
    handover: dependencies.embeddingHandover,
    journal: dependencies.journal,
    pool: dependencies.pool,
    limits: { maxInputs: settings.EMBEDDING_MAX_INPUTS, maxTokens: settings.EMBEDDING_MAX_TOKENS },
    defaultModel: settings.EMBEDDING_MODEL,
    calls: dependencies.embeddingCalls,
  });
}
