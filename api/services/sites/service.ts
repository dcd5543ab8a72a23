/**
 * Site publishing for the HTTP API (spec 4.6), over the one site store (activities/sites/site-store.ts) the
 * publish_site tool writes through too. This layer turns the store's outcomes into the API's errors:
 *
 * - `publish` (POST) creates only: a name that is taken is a 409 `conflict`, with a message saying whether it is the
 *   caller's own (update it with PUT) or someone else's.
 * - `update` (PUT) and `remove` (DELETE) act on the caller's own sites: another user's site is answered as one that
 *   does not exist (404), as for memories and agents, so ownership is not probed through them.
 * - Rule violations (the store's RangeError: reserved or malformed subdomain, oversize html) are 400s.
 */
import type { SiteInput, SiteStore, SiteSummary } from '../../../activities/sites/site-store.ts';
import { ApiError } from '../../errors.ts';

export class SiteService {
  readonly store: SiteStore;

  constructor(store: SiteStore) {
    this.store = store;
  }

  /** `port`: the one the request came in on, used for URLs when the service listens on an ephemeral port. */
  async publish(userId: string, input: SiteInput, port?: number): Promise<SiteSummary> {
    const outcome = await refusals(() => this.store.create(userId, input, port));
    if ('site' in outcome) return outcome.site;
    throw new ApiError(
      'conflict',
      outcome.refused === 'yours'
        ? `You already published '${input.subdomain}': update it with PUT /deploy/site/${input.subdomain}`
        : `The subdomain '${input.subdomain}' is taken; choose another`,
      { param: 'subdomain' },
    );
  }

  async update(
    userId: string,
    subdomain: string,
    changes: { title?: string; html?: string },
    port?: number,
  ): Promise<SiteSummary> {
    const site = await refusals(() => this.store.update(userId, subdomain, changes, port));
    if (!site) throw notFound(subdomain);
    return site;
  }

  async remove(userId: string, subdomain: string): Promise<void> {
    if (!(await this.store.delete(userId, subdomain))) throw notFound(subdomain);
  }

  list(userId: string, port?: number): Promise<SiteSummary[]> {
    return this.store.list(userId, port);
  }
}

function notFound(subdomain: string): ApiError {
  return new ApiError('not_found', `You have no site '${subdomain}'`);
}

async function refusals<T>(action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (error) {
    if (error instanceof RangeError) {
      const param = /subdomain/.test(error.message) ? 'subdomain' : /title/.test(error.message) ? 'title' : 'html';
      throw new ApiError('invalid_request', error.message, { param });
    }
    throw error;
  }
}
