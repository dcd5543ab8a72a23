/**
 * Reads the model catalogue (YAML, zod-validated) and the provider settings from the environment:
 * `<ENV>_API_KEY` enables a provider, `<ENV>_BASE_URL` overrides its address. The self-hosted fallback is
 * `SELF_HOSTED_BASE_URL` + `SELF_HOSTED_MODEL` (+ optional `SELF_HOSTED_API_KEY`).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { catalogueFileSchema, type Catalogue, type CatalogueModel } from '../common/catalogue.ts';

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

  let selfHosted: CatalogueModel | null = null;
  const selfHostedUrl = environment.SELF_HOSTED_BASE_URL?.trim();
  const selfHostedModel = environment.SELF_HOSTED_MODEL?.trim();
  if (selfHostedUrl && selfHostedModel) {
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
  return { catalogue: { providers, models, tiers: file.tiers, auto: file.auto, selfHosted }, endpoints };
}
