/** `/api/v1/providers` (spec 4.8): providers, their models and live breaker state. `/health`: api/readiness.ts. */
import Router from '@koa/router';
import type { Catalogue } from '../../../../common/catalogue.ts';
import type { CircuitBreaker } from '../../../../activities/routing/circuit-breaker.ts';

export function providerRoutes(catalogue: Catalogue, breaker: CircuitBreaker) {
  const router = new Router();

  router.get('/api/v1/providers', async (context) => {
    const views = await breaker.views();
    const providers = catalogue.providers.map((provider) => {
      const view = views.get(provider.id);
      const models = [
        ...catalogue.models.filter((model) => model.provider === provider.id).map((model) => model.id),
        ...(catalogue.selfHosted?.provider === provider.id ? [catalogue.selfHosted.id] : []),
      ];
      return {
        id: provider.id,
        name: provider.name,
        models,
        enabled: provider.enabled,
        protocol: provider.protocol,
        circuit: {
          state: view?.state ?? 'closed',
          consecutive_failures: view?.consecutiveFailures ?? 0,
          opened_at: view?.openedAt?.toISOString() ?? null,
          last_error: view?.lastError ?? null,
        },
      };
    });
    const enabled = providers.filter((provider) => provider.enabled);
    context.body = { providers, load_balanced: enabled.length > 1, total_providers: providers.length };
  });

  return router;
}
