/**
 * The model catalogue: zod schema of config/models.yaml and the resolved, ready-to-route form.
 * Workflow-safe (no I/O); config/load-catalogue.ts reads the file.
 */
import { z } from 'zod';

const tierSchema = z.enum(['top', 'balanced', 'fast', 'reasoning']);
export type Tier = z.infer<typeof tierSchema>;

const capabilitySchema = z.enum(['tools', 'json', 'vision', 'reasoning', 'long_context']);
export type Capability = z.infer<typeof capabilitySchema>;

export const catalogueFileSchema = z
  .object({
    providers: z
      .array(
        z
          .object({
            id: z.string().regex(/^[a-z0-9-]+$/),
            name: z.string(),
            protocol: z.enum(['openai', 'anthropic', 'gemini']),
            env: z.string().regex(/^[A-Z][A-Z0-9_]*$/),
            base_url: z.url(),
          })
          .strict(),
      )
      .min(1),
    tiers: z.record(tierSchema, z.object({ fallback: z.array(tierSchema) }).strict()),
    auto: z
      .object({
        default_tier: tierSchema,
        tools_tier: tierSchema,
        long_context_tier: tierSchema,
        long_context_chars: z.number().int().positive(),
        reasoning_tier: tierSchema,
      })
      .strict(),
    models: z
      .array(
        z
          .object({
            id: z.string().regex(/^[a-z0-9][a-z0-9.-]*$/),
            provider: z.string(),
            tier: tierSchema,
            context_window: z.number().int().positive(),
            capabilities: z.array(capabilitySchema),
            price: z
              .object({ input_per_1m: z.number().nonnegative(), output_per_1m: z.number().nonnegative() })
              .strict(),
            versions: z.array(z.object({ date: z.iso.date(), upstream_id: z.string().min(1) }).strict()).min(1),
          })
          .strict(),
      )
      .min(1),
    /**
     * Models of `POST /v1/embeddings` (and RAG). `providers` serve the same model, in the order tried: vectors of one
     * model are the same whichever of them answers, so failover stays among them. `engine: local` is the local
     * engine, which runs in Tessera's own processes. `shortenable`: takes `dimensions` (a shorter vector).
     */
    embedding_models: z
      .array(
        z
          .object({
            id: z.string().regex(/^[a-z0-9][a-z0-9.-]*$/),
            providers: z
              .array(z.object({ provider: z.string(), upstream_id: z.string().min(1) }).strict())
              .min(1)
              .optional(),
            engine: z.literal('local').optional(),
            dimensions: z.number().int().positive(),
            shortenable: z.boolean().default(false),
            max_input_tokens: z.number().int().positive(),
            price: z.object({ input_per_1m: z.number().nonnegative() }).strict(),
            released: z.iso.date(),
          })
          .strict()
          .refine((model) => !!model.providers !== !!model.engine, {
            message: 'an embedding model has either providers or engine: local',
          }),
      )
      .default([]),
  })
  .strict()
  .superRefine((file, context) => {
    const providerIds = new Set(file.providers.map((provider) => provider.id));
    const modelIds = new Set<string>();
    file.models.forEach((model, index) => {
      if (!providerIds.has(model.provider)) {
        context.addIssue({
          code: 'custom',
          path: ['models', index, 'provider'],
          message: `unknown provider ${model.provider}`,
        });
      }
      if (modelIds.has(model.id)) {
        context.addIssue({ code: 'custom', path: ['models', index, 'id'], message: `duplicate model ${model.id}` });
      }
      modelIds.add(model.id);
    });
    file.embedding_models.forEach((model, index) => {
      model.providers?.forEach((served, position) => {
        if (!providerIds.has(served.provider)) {
          context.addIssue({
            code: 'custom',
            path: ['embedding_models', index, 'providers', position, 'provider'],
            message: `unknown provider ${served.provider}`,
          });
        }
      });
      if (modelIds.has(model.id)) {
        context.addIssue({
          code: 'custom',
          path: ['embedding_models', index, 'id'],
          message: `duplicate model ${model.id}`,
        });
      }
      modelIds.add(model.id);
    });
  });

export type CatalogueFile = z.infer<typeof catalogueFileSchema>;

export interface ModelPrice {
  input_per_1m: number;
  output_per_1m: number;
}

/** One routable model: a catalogue model or the self-hosted fallback. */
export interface CatalogueModel {
  id: string;
  provider: string;
  tier: Tier | 'self-hosted';
  contextWindow: number;
  capabilities: Capability[];
  price: ModelPrice;
  /** Dated pins, oldest first; the last one is what the plain id means. */
  versions: Array<{ id: string; date: string; upstreamId: string }>;
  /** Unix time of the latest pin's date: the `created` field of `/v1/models`. */
  created: number;
}

export interface CatalogueProvider {
  id: string;
  name: string;
  protocol: 'openai' | 'anthropic' | 'gemini';
  env: string;
  baseUrl: string;
  /** False when no API key is configured: the provider is listed but never a candidate. */
  enabled: boolean;
}

/** The provider id of the local embedding engine (it runs in Tessera's processes, so it is always available). */
export const localEngineProviderId = 'local';

/** One model of `POST /v1/embeddings`: a catalogue entry, the self-hosted embedding model, or the local engine. */
export interface EmbeddingModel {
  id: string;
  /** Who serves this same model, in the order tried (the local engine: `local`). */
  servedBy: Array<{ provider: string; upstreamId: string }>;
  /** Length of its vectors; null when unknown (a self-hosted model configured without SELF_HOSTED_EMBEDDING_DIMENSIONS). */
  dimensions: number | null;
  /** Takes `dimensions`: asked for fewer, it returns the leading ones, renormalised. */
  shortenable: boolean;
  maxInputTokens: number;
  price: { input_per_1m: number };
  /** Unix time of its release: the `created` of `/v1/models`. */
  created: number;
  /** Operated by the deployment itself (the self-hosted server, the local engine): open to every plan. */
  operatorOwned: boolean;
}

export interface Catalogue {
  providers: CatalogueProvider[];
  models: CatalogueModel[];
  /** Embedding models in the order the default is chosen: the file's, then the self-hosted one. */
  embeddingModels: EmbeddingModel[];
  tiers: CatalogueFile['tiers'];
  auto: CatalogueFile['auto'];
  selfHosted: CatalogueModel | null;
}

/** What a requested model id resolves to: the model and the pinned version to call. */
export interface ResolvedModel {
  model: CatalogueModel;
  /** The id as it will appear in the response: the pin when one was requested, else the plain id. */
  responseId: string;
  upstreamId: string;
}

/** The embedding model of an id, or null. */
export function resolveEmbeddingModel(catalogue: Catalogue, requested: string): EmbeddingModel | null {
  return catalogue.embeddingModels.find((model) => model.id === requested) ?? null;
}

/** Resolves a plain id (alias of the latest pin) or a dated pin `<id>-YYYY-MM-DD`. */
export function resolveModel(catalogue: Catalogue, requested: string): ResolvedModel | null {
  for (const model of catalogue.models) {
    if (model.id === requested) {
      const latest = model.versions[model.versions.length - 1]!;
      return { model, responseId: model.id, upstreamId: latest.upstreamId };
    }
    const pin = model.versions.find((version) => version.id === requested);
    if (pin) return { model, responseId: pin.id, upstreamId: pin.upstreamId };
  }
  const selfHosted = catalogue.selfHosted;
  if (selfHosted && selfHosted.id === requested) {
    return { model: selfHosted, responseId: selfHosted.id, upstreamId: selfHosted.versions[0]!.upstreamId };
  }
  return null;
}
