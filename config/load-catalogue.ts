/**
 * Reads the model catalogue (YAML, zod-validated) and the provider settings from the environment:
 * `<ENV>_API_KEY` enables a provider, `<ENV>_BASE_URL` overrides its address. The self-hosted fallback is
 * `SELF_HOSTED_BASE_URL` + `SELF_HOSTED_MODEL` (+ optional `SELF_HOSTED_API_KEY`); the same server's embedding model
 * is `SELF_HOSTED_EMBEDDING_MODEL` (+ optional `SELF_HOSTED_EMBEDDING_DIMENSIONS`).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import {
  catalogueFileSchema,
  localEngineProviderId,
  type Catalogue,
  type CatalogueModel,
  type EmbeddingModel,
} from '../common/catalogue.ts';

export const defaultCataloguePath = fileURLToPath(new URL('./models.yaml', import.meta.url));

export interface ProviderEndpoint {
  provider: string;
  protocol: 'openai' | 'anthropic' | 'gemini';
  baseUrl: string;
  apiKey: string;
}

export interface LoadedCatalogue {
  catalogue: Catalogue;
  /** Enabled providers' endpoints with their secrets; never sent to clients or workflow history. */
  endpoints: Map<string, ProviderEndpoint>;
}

export const selfHostedProviderId = 'self-hosted';

type Environment = Record<string, string | undefined>;

/** Loads and validates the catalogue; throws an Error naming the bad field. */
export function loadCatalogue(environment: Environment = process.env, path?: string): LoadedCatalogue {
  const filePath = path ?? environment.MODEL_CATALOGUE_PATH ?? defaultCataloguePath;
  const parsed = catalogueFileSchema.safeParse(parse(readFileSync(filePath, 'utf8')));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`invalid model catalogue ${filePath}: ${issue.path.join('.')}: ${issue.message}`);
  }
  const file = parsed.data;
  const endpoints = new Map<string, ProviderEndpoint>();
  const providers = file.providers.map((provider) => {
    const apiKey = environment[`${provider.env}_API_KEY`]?.trim();
    const baseUrl = (environment[`${provider.env}_BASE_URL`]?.trim() || provider.base_url).replace(/\/+$/, '');
    if (apiKey) endpoints.set(provider.id, { provider: provider.id, protocol: provider.protocol, baseUrl, apiKey });
    return {
      id: provider.id,
      name: provider.name,
      protocol: provider.protocol,
      env: provider.env,
      baseUrl,
      enabled: !!apiKey,
    };
  });
  const models: CatalogueModel[] = file.models.map((model) => {
    const versions = [...model.versions]
      .sort((left, right) => left.date.localeCompare(right.date))
      .map((version) => ({ id: `${model.id}-${version.date}`, date: version.date, upstreamId: version.upstream_id }));
    return {
      id: model.id,
      provider: model.provider,
      tier: model.tier,
      contextWindow: model.context_window,
      capabilities: model.capabilities,
      price: model.price,
      versions,
      created: Date.parse(versions[versions.length - 1]!.date) / 1000,
    };
  });

  const embeddingModels: EmbeddingModel[] = file.embedding_models.map((model) => ({
    id: model.id,
    servedBy: model.providers
      ? model.providers.map((served) => ({ provider: served.provider, upstreamId: served.upstream_id }))
      : [{ provider: localEngineProviderId, upstreamId: model.id }],
    dimensions: model.dimensions,
    shortenable: model.shortenable,
    maxInputTokens: model.max_input_tokens,
    price: model.price,
    created: Date.parse(model.released) / 1000,
    operatorOwned: model.engine === 'local',
  }));

  let selfHosted: CatalogueModel | null = null;
  const selfHostedUrl = environment.SELF_HOSTED_BASE_URL?.trim();
  const selfHostedModel = environment.SELF_HOSTED_MODEL?.trim();
  const selfHostedEmbeddingModel = environment.SELF_HOSTED_EMBEDDING_MODEL?.trim();
  if (selfHostedUrl && (selfHostedModel || selfHostedEmbeddingModel)) {
    endpoints.set(selfHostedProviderId, {
      provider: selfHostedProviderId,
      protocol: 'openai',
      baseUrl: selfHostedUrl.replace(/\/+$/, ''),
      // Ollama, vLLM and llama.cpp accept any bearer token unless configured otherwise.
      apiKey: environment.SELF_HOSTED_API_KEY?.trim() || 'self-hosted',
    });
    providers.push({
      id: selfHostedProviderId,
      name: 'Self-hosted',
      protocol: 'openai',
      env: 'SELF_HOSTED',
      baseUrl: selfHostedUrl,
      enabled: true,
    });
  }
  if (selfHostedUrl && selfHostedModel) {
    selfHosted = {
      id: selfHostedModel,
      provider: selfHostedProviderId,
      tier: 'self-hosted',
      contextWindow: Number(environment.SELF_HOSTED_CONTEXT_WINDOW ?? 32768),
      capabilities: ['tools', 'json'],
      price: { input_per_1m: 0, output_per_1m: 0 },
      versions: [{ id: selfHostedModel, date: '1970-01-01', upstreamId: selfHostedModel }],
      created: 0,
    };
  }
  if (selfHostedUrl && selfHostedEmbeddingModel) {
    const dimensions = Number(environment.SELF_HOSTED_EMBEDDING_DIMENSIONS ?? '');
    // Before the local engine: the operator's own server is the better default when there is no hosted key.
    const localIndex = embeddingModels.findIndex((model) => model.servedBy[0]?.provider === localEngineProviderId);
    embeddingModels.splice(localIndex < 0 ? embeddingModels.length : localIndex, 0, {
      id: selfHostedEmbeddingModel,
      servedBy: [{ provider: selfHostedProviderId, upstreamId: selfHostedEmbeddingModel }],
      dimensions: Number.isInteger(dimensions) && dimensions > 0 ? dimensions : null,
      // Servers differ on `dimensions` (Ollama ignores it): only the model's own length is promised.
      shortenable: false,
      // The gateway's own bound; a server with a shorter context refuses longer inputs itself (a 400, not a failover).
      maxInputTokens: 8192,
      price: { input_per_1m: 0 },
      created: 0,
      operatorOwned: true,
    });
  }
  return {
    catalogue: { providers, models, embeddingModels, tiers: file.tiers, auto: file.auto, selfHosted },
    endpoints,
  };
}
