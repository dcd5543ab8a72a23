/**
 * The router: resolves the requested model and plans the candidates from the catalogue and the shared
 * breaker state. The API plans before starting the workflow, and the plan is the workflow's input, so it is
 * recorded in history and a replayed or resumed workflow follows the same plan.
 */
import { resolveModel } from '../../common/catalogue.ts';
import type { ChatCompletionRequest } from '../../common/chat.ts';
import type { Candidate } from '../../common/completion.ts';
import type { LoadedCatalogue } from '../../config/load-catalogue.ts';
import { chooseAutoTier } from './auto-model.ts';
import type { CircuitBreaker } from './circuit-breaker.ts';
import { planCandidates } from './plan-candidates.ts';

export class Router {
  private readonly catalogue: LoadedCatalogue;
  private readonly breaker: CircuitBreaker;
  private rotation = 0;

  constructor(catalogue: LoadedCatalogue, breaker: CircuitBreaker) {
    this.catalogue = catalogue;
    this.breaker = breaker;
  }

  /** The candidates to try in order, or null when the model does not exist. */
  async plan(request: ChatCompletionRequest): Promise<Candidate[] | null> {
    const { catalogue } = this.catalogue;
    const resolved = request.model === 'auto' ? null : resolveModel(catalogue, request.model);
    if (request.model !== 'auto' && !resolved) return null;
    const views = await this.breaker.views();
    const now = Date.now();
    return planCandidates({
      catalogue,
      target: resolved ? { resolved } : chooseAutoTier(catalogue, request),
      needsTools: !!request.tools?.length && request.tool_choice !== 'none',
      needsJson: request.response_format?.type === 'json_object' || request.response_format?.type === 'json_schema',
      admission: (provider) => this.breaker.admission(views.get(provider), now),
      rotation: this.rotation++,
    });
  }
}
