/**
 * The router: which models to try, in which order. Pure, so it is tested without a database.
 * Order: the requested model; the other models of its tier in round-robin order; the models of the tier's
 * fallback tiers (config `tiers.<tier>.fallback`); the self-hosted model last. A model is skipped when its
 * provider has no key, it lacks a capability the request needs, or its provider's breaker is open.
 */
import type { Catalogue, CatalogueModel, ResolvedModel, Tier } from '../../common/catalogue.ts';
import type { Candidate } from '../../common/completion.ts';

export type BreakerAdmission = 'closed' | 'probe' | 'open';

export interface PlanInput {
  catalogue: Catalogue;
  /** The resolved model, or the tier `auto` chose. */
  target: { resolved: ResolvedModel } | { tier: Tier; preferLongContext: boolean };
  needsTools: boolean;
  needsJson: boolean;
  /** The request carries images: only models with `vision` can read them. */
  needsVision?: boolean;
  /** Breaker admission per provider; providers absent are closed. */
  admission: (provider: string) => BreakerAdmission;
  /** A counter that advances on every plan, spreading load over same-tier models. */
  rotation: number;
  /** The caller's plan: models outside it are never candidates, failover included. */
  allowed?: (model: CatalogueModel) => boolean;
}

export function planCandidates(input: PlanInput): Candidate[] {
  const { catalogue } = input;
  const enabled = new Set(catalogue.providers.filter((provider) => provider.enabled).map((provider) => provider.id));
  const usable = (model: CatalogueModel) =>
    enabled.has(model.provider) &&
    (!input.needsTools || model.capabilities.includes('tools')) &&
    (!input.needsJson || model.capabilities.includes('json')) &&
    (!input.needsVision || model.capabilities.includes('vision')) &&
    input.admission(model.provider) !== 'open' &&
    (input.allowed?.(model) ?? true);
  const toCandidate = (model: CatalogueModel, responseId?: string, upstreamId?: string): Candidate => ({
    model: responseId ?? model.id,
    modelId: model.id,
    provider: model.provider,
    upstreamModel: upstreamId ?? model.versions[model.versions.length - 1]!.upstreamId,
    tier: model.tier,
    price: model.price,
    probe: input.admission(model.provider) === 'probe',
  });
  const rotate = <T>(items: T[]): T[] => {
    if (items.length === 0) return items;
    const offset = input.rotation % items.length;
    return [...items.slice(offset), ...items.slice(0, offset)];
  };

  const candidates: Candidate[] = [];
  const seen = new Set<string>();
  const add = (candidate: Candidate) => {
    if (seen.has(candidate.model)) return;
    seen.add(candidate.model);
    candidates.push(candidate);
  };

  let tier: Tier;
  if ('resolved' in input.target) {
    const { model, responseId, upstreamId } = input.target.resolved;
    if (usable(model)) add(toCandidate(model, responseId, upstreamId));
    if (model.tier === 'self-hosted') {
      return candidates;
    }
    seen.add(model.id);
    tier = model.tier;
  } else {
    tier = input.target.tier;
  }

  const inTier = (wanted: Tier) => catalogue.models.filter((model) => model.tier === wanted && usable(model));
  let sameTier = rotate(inTier(tier));
  if (!('resolved' in input.target) && input.target.preferLongContext) {
    sameTier = [...sameTier].sort(
      (left, right) =>
        Number(right.capabilities.includes('long_context')) - Number(left.capabilities.includes('long_context')),
    );
  }
  sameTier.forEach((model) => add(toCandidate(model)));
  for (const fallbackTier of catalogue.tiers[tier]?.fallback ?? []) {
    rotate(inTier(fallbackTier)).forEach((model) => add(toCandidate(model)));
  }
  if (catalogue.selfHosted && usable(catalogue.selfHosted)) add(toCandidate(catalogue.selfHosted));
  return candidates;
}
