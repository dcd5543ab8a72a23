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

export interface Catalogue {
  providers: CatalogueProvider[];
  models: CatalogueModel[];
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
