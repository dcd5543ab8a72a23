/**
 * The router: resolves the requested model and plans the candidates from the catalogue and the shared
 * breaker state. The API plans before starting the workflow, and the plan is the workflow's input, so it is
 * recorded in history and a replayed or resumed workflow follows the same plan.
 */
import {
  localEngineProviderId,
  resolveEmbeddingModel,
  resolveModel,
  type Catalogue,
  type CatalogueModel,
  type EmbeddingModel,
} from '../../common/catalogue.ts';
import type { EmbeddingCandidate } from '../../common/embeddings.ts';
import {
  cheapestPlanFor,
  creditRate,
  embeddingCreditRate,
  planAllows,
  type PlanName,
  type PlannedModel,
  type PlansFile,
} from '../../common/plans.ts';
import { hasImages, type ChatCompletionRequest } from '../../common/chat.ts';
import type { Candidate } from '../../common/completion.ts';
import type { LoadedCatalogue } from '../../config/load-catalogue.ts';
import { chooseAutoTier } from './auto-model.ts';
import type { CircuitBreaker } from './circuit-breaker.ts';
import { planCandidates } from './plan-candidates.ts';

/** Who is asking: their plan decides which models may serve them. Absent for the operator (everything). */
export interface RoutingAccount {
  plan: PlanName;
  customModels?: string[] | 'all';
}

/**
 * Whether an account may use a model: its operator-set model list when it has one, else its plan's (no account:
 * the operator, everything). The one rule for completions, chat turns and agents' model choices.
 */
export function accountAllows(plans: PlansFile, account: RoutingAccount | null, model: PlannedModel): boolean {
  if (!account) return true;
  if (account.customModels) return account.customModels === 'all' || account.customModels.includes(model.id);
  return planAllows(plans, account.plan, model);
}

export type Plan =
  | { kind: 'planned'; candidates: Candidate[] }
  | { kind: 'model_not_found' }
  | { kind: 'not_in_plan'; model: string; requiredPlan: PlanName | null }
  /** The request carries images and the requested model has no `vision` capability. */
  | { kind: 'needs_vision'; model: string };

export type EmbeddingPlan =
  /** `models`: the requested model, then the fallback models the caller named. */
  | { kind: 'planned'; models: EmbeddingModel[]; candidates: EmbeddingCandidate[] }
  /** `chatModel`: the id names a chat model, which has no embeddings. */
  | { kind: 'model_not_found'; model: string; chatModel: boolean }
  | { kind: 'not_in_plan'; model: string; requiredPlan: PlanName | null };

export class Router {
  private readonly catalogue: LoadedCatalogue;
  private readonly breaker: CircuitBreaker;
  private readonly plans: PlansFile;
  private rotation = 0;

  constructor(catalogue: LoadedCatalogue, breaker: CircuitBreaker, plans: PlansFile) {
    this.catalogue = catalogue;
    this.breaker = breaker;
    this.plans = plans;
  }

  /**
   * The candidates to try in order, each with its credit rate. A model outside the account's plan is
   * refused when requested and never used for failover; so is a model without `vision` for a request with images.
   */
  async plan(request: ChatCompletionRequest, account: RoutingAccount | null): Promise<Plan> {
    const { catalogue } = this.catalogue;
    const resolved = request.model === 'auto' ? null : resolveModel(catalogue, request.model);
    if (request.model !== 'auto' && !resolved) return { kind: 'model_not_found' };
    const allowed = (model: CatalogueModel) => accountAllows(this.plans, account, model);
    if (resolved && !allowed(resolved.model)) {
      return {
        kind: 'not_in_plan',
        model: resolved.model.id,
        requiredPlan: cheapestPlanFor(this.plans, resolved.model),
      };
    }
    const needsVision = hasImages(request.messages);
    if (resolved && needsVision && !resolved.model.capabilities.includes('vision')) {
      return { kind: 'needs_vision', model: resolved.model.id };
    }
    const views = await this.breaker.views();
    const now = Date.now();
    const candidates = planCandidates({
      catalogue,
      target: resolved ? { resolved } : chooseAutoTier(catalogue, request),
      needsTools: !!request.tools?.length && request.tool_choice !== 'none',
      needsJson: request.response_format?.type === 'json_object' || request.response_format?.type === 'json_schema',
      needsVision,
      admission: (provider) => this.breaker.admission(views.get(provider), now),
      rotation: this.rotation++,
      allowed,
    });
    for (const candidate of candidates) {
      candidate.creditRate = creditRate(this.plans, {
        id: candidate.modelId ?? candidate.model,
        price: candidate.price,
      });
    }
    return { kind: 'planned', candidates };
  }

  /**
   * The candidates of an embedding request: the providers serving the requested model, in the catalogue's order, then
   * those of each model the caller named in `fallbackModels` (vectors of another model are not comparable with the
   * requested one's, so no other model is ever tried unasked). Providers without a key or with an open circuit are
   * left out; the local engine is always there. A model outside the account's plan is refused when named, requested
   * or as a fallback.
   */
  async planEmbedding(
    requested: string,
    fallbackModels: string[],
    account: RoutingAccount | null,
  ): Promise<EmbeddingPlan> {
    const { catalogue } = this.catalogue;
    const models: EmbeddingModel[] = [];
    for (const id of [requested, ...fallbackModels]) {
      const model = resolveEmbeddingModel(catalogue, id);
      if (!model) return { kind: 'model_not_found', model: id, chatModel: resolveModel(catalogue, id) !== null };
      const planned = { id: model.id, tier: model.operatorOwned ? ('self-hosted' as const) : undefined };
      if (!accountAllows(this.plans, account, planned)) {
        return { kind: 'not_in_plan', model: model.id, requiredPlan: cheapestPlanFor(this.plans, planned) };
      }
      if (!models.includes(model)) models.push(model);
    }
    const enabled = new Set(catalogue.providers.filter((provider) => provider.enabled).map((provider) => provider.id));
    const views = await this.breaker.views();
    const now = Date.now();
    const candidates = models.flatMap((model) =>
      model.servedBy.flatMap((served): EmbeddingCandidate[] => {
        const local = served.provider === localEngineProviderId;
        const admission = local ? 'closed' : this.breaker.admission(views.get(served.provider), now);
        if ((!local && !enabled.has(served.provider)) || admission === 'open') return [];
        return [
          {
            model: model.id,
            provider: served.provider,
            upstreamModel: served.upstreamId,
            creditRate: embeddingCreditRate(this.plans, model),
            probe: admission === 'probe',
          },
        ];
      }),
    );
    return { kind: 'planned', models, candidates };
  }
}

/**
 * The embedding model used when a caller names none (RAG indexing and search): `preferred` (the EMBEDDING_MODEL
 * setting) when set, else the first catalogue embedding model with a provider that has a key, in the catalogue's
 * order (hosted models, then the self-hosted one, then the local engine, which needs none).
 */
export function defaultEmbeddingModel(catalogue: Catalogue, preferred?: string): EmbeddingModel | null {
  if (preferred) return resolveEmbeddingModel(catalogue, preferred);
  const enabled = new Set(catalogue.providers.filter((provider) => provider.enabled).map((provider) => provider.id));
  return (
    catalogue.embeddingModels.find((model) =>
      model.servedBy.some((served) => served.provider === localEngineProviderId || enabled.has(served.provider)),
    ) ?? null
  );
}
