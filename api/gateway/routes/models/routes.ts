/**
 * `/v1/models` (no key): the 12 catalogue models by plain id. `?include=versions` adds every dated pin;
 * `/v1/models/{id}` retrieves a plain id or a pin. The self-hosted fallback is not listed here (it is an
 * operator's deployment detail, shown in `/api/v1/providers`). The embedding models are listed apart, with
 * `?type=embedding` (chat clients fill their model pickers from the plain list), and retrievable by id.
 */
import Router from '@koa/router';
import type { Catalogue, CatalogueModel, EmbeddingModel } from '../../../../common/catalogue.ts';
import { localEngineProviderId, resolveEmbeddingModel, resolveModel } from '../../../../common/catalogue.ts';
import { creditRates, embeddingCreditRate, type PlansFile } from '../../../../common/plans.ts';
import { ApiError } from '../../../errors.ts';

function presentModel(id: string, model: CatalogueModel) {
  return { id, object: 'model' as const, created: model.created, owned_by: model.provider };
}

function presentEmbeddingModel(model: EmbeddingModel) {
  const provider = model.servedBy[0]!.provider;
  return {
    id: model.id,
    object: 'model' as const,
    created: model.created,
    owned_by: provider === localEngineProviderId ? 'tessera' : provider,
    type: 'embedding' as const,
    dimensions: model.dimensions,
    shortenable: model.shortenable,
    max_input_tokens: model.maxInputTokens,
  };
}

export function modelRoutes(catalogue: Catalogue, plans: PlansFile) {
  const router = new Router();
  const listed = catalogue.models.map((model) => presentModel(model.id, model));
  const withVersions = catalogue.models.flatMap((model) => [
    presentModel(model.id, model),
    ...model.versions.map((version) => presentModel(version.id, model)),
  ]);

  const embeddingModels = catalogue.embeddingModels.map(presentEmbeddingModel);

  router.get('/v1/models', (context) => {
    if (context.query.type === 'embedding') {
      context.body = { object: 'list', data: embeddingModels };
      return;
    }
    context.body = { object: 'list', data: context.query.include === 'versions' ? withVersions : listed };
  });

  router.get('/v1/models/pricing', (context) => {
    context.body = {
      object: 'pricing',
      currency: 'USD',
      unit: 'per_1m_tokens',
      models: Object.fromEntries(catalogue.models.map((model) => [model.id, model.price])),
      embedding_models: Object.fromEntries(catalogue.embeddingModels.map((model) => [model.id, model.price])),
    };
  });

  // Plans, their prices, credits, models and limits, and the credit rate of every model (no key needed).
  router.get('/api/v1/plans', (context) => {
    context.body = {
      plans: plans.plans,
      guest_rate_limits: plans.guest_rate_limits,
      credit_rates: {
        ...creditRates(plans, catalogue),
        ...Object.fromEntries(catalogue.embeddingModels.map((model) => [model.id, embeddingCreditRate(plans, model)])),
      },
    };
  });

  router.get('/v1/models/:id', (context) => {
    const embedding = resolveEmbeddingModel(catalogue, context.params.id!);
    if (embedding) {
      context.body = presentEmbeddingModel(embedding);
      return;
    }
    const resolved = resolveModel(catalogue, context.params.id!);
    if (!resolved || resolved.model.tier === 'self-hosted') {
      throw new ApiError('model_not_found', `The model '${context.params.id}' does not exist`);
    }
    context.body = presentModel(resolved.responseId, resolved.model);
  });

  return router;
}
