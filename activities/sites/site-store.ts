/**
 * Published sites (spec 4.6): plain SQL on the `pg` pool (table `published_sites`). The one implementation behind
 * both writers: the HTTP routes (api/services/sites/, api/agents/routes/sites/) and the publish_site tool (through
 * `ToolServices['sites']`, which this store satisfies); the site host (api/agents/routes/sites/site-host.ts) reads
 * `serve()`.
 *
 * - A subdomain is one DNS label (lowercase letters, digits, `-` inside; 1 to 63 characters), not reserved
 *   (`reservedSubdomains`), and not of the `ab--` form DNS keeps for encodings (`xn--…` would allow look-alikes).
 *   It is owned by the user who published it first: nobody else can replace or delete it.
 * - The html is stored and served exactly as given (a whole document is expected; nothing is rewritten), at most
 *   `maxBytes` UTF-8 bytes, without NUL characters (PostgreSQL text cannot hold them). Its `etag` is the SHA-256 of
 *   the html (base64url): the site's validator.
 * - `create` never replaces (the HTTP POST answers 409 for a name that is taken, the caller's own included: PUT
 *   updates). `publish` (the tool) creates, or replaces the caller's own site of that name, and records the tool
 *   call (`publish_key`, kept by HTTP updates): a retried call finds its own write and changes nothing, so a retry
 *   publishes once.
 * - Rule violations throw `RangeError` (the routes answer 400, the tool tells the model).
 */
import { createHash } from 'node:crypto';
import { run, type Pool } from '../../db/pool.ts';

/** DNS label: `[a-z0-9]`, `-` inside, 1 to 63 characters. */
export const subdomainPattern = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Names nobody may publish on: the service's own hosts and what people take for them (www, api, app, auth…),
 * mail and DNS infrastructure names (mail, smtp, mx, ns1, autodiscover, mta-sts…), and names that impersonate
 * the operator (admin, support, security, billing, status…).
 */
export const reservedSubdomains: ReadonlySet<string> = new Set([
  'www',
  'api',
  'app',
  'apps',
  'admin',
  'administrator',
  'root',
  'auth',
  'login',
  'logout',
  'signin',
  'signup',
  'sso',
  'oauth',
  'account',
  'accounts',
  'id',
  'mail',
  'email',
  'webmail',
  'smtp',
  'imap',
  'pop',
  'pop3',
  'mx',
  'autodiscover',
  'autoconfig',
  'mta-sts',
  'ns',
  'ns1',
  'ns2',
  'dns',
  'ftp',
  'static',
  'assets',
  'cdn',
  'media',
  'files',
  'localhost',
  'gateway',
  'agents',
  'agent',
  'tessera',
  'site',
  'sites',
  'deploy',
  'dashboard',
  'console',
  'status',
  'billing',
  'pay',
  'payments',
  'support',
  'help',
  'security',
  'abuse',
  'postmaster',
  'hostmaster',
  'webmaster',
  'docs',
  'blog',
  'dev',
  'staging',
  'test',
  'internal',
  'wpad',
  'isatap',
]);

/** Characters a site's title holds at most. */
export const SITE_TITLE_MAX_CHARS = 200;
/** The default of SITE_MAX_BYTES: 1 MiB of UTF-8. */
export const SITE_DEFAULT_MAX_BYTES = 1_048_576;

export interface SiteInput {
  subdomain: string;
  title: string;
  html: string;
}

export interface SiteSummary {
  subdomain: string;
  title: string;
  url: string;
  /** UTF-8 bytes of the html. */
  bytes: number;
  etag: string;
  created_at: string;
  updated_at: string;
}

/** What the site host serves. */
export interface ServedSite {
  html: string;
  etag: string;
  updatedAt: Date;
}

export type CreateOutcome = { site: SiteSummary } | { refused: 'taken' | 'yours' };

/** Why a subdomain cannot be used, or null when it can. */
export function subdomainProblem(subdomain: string): string | null {
  if (!subdomainPattern.test(subdomain)) {
    return 'a subdomain is one DNS label: 1 to 63 lowercase letters, digits and hyphens, not starting or ending with a hyphen';
  }
  if (reservedSubdomains.has(subdomain)) return `the subdomain '${subdomain}' is reserved`;
  if (subdomain.slice(2, 4) === '--') return 'subdomains with "--" in the third and fourth place are reserved by DNS';
  return null;
}

/** Where sites are reachable: a template with `{subdomain}`, or a scheme and port on `<subdomain>.<domain>`. */
export class SiteUrls {
  readonly domain: string;
  private readonly template: string | undefined;
  private readonly protocol: string;
  private readonly port: string;

  constructor(settings: { domain: string; template?: string; publicUrl?: string; port: number }) {
    this.domain = settings.domain;
    this.template = settings.template;
    const base = settings.publicUrl ? new URL(settings.publicUrl) : undefined;
    this.protocol = base?.protocol ?? 'http:';
    this.port = base ? base.port : String(settings.port);
  }

  /** The site's address; `port` overrides the configured one when the service listens on an ephemeral port. */
  url(subdomain: string, port?: number): string {
    if (this.template) return this.template.replaceAll('{subdomain}', subdomain);
    const chosen = this.port === '0' && port ? String(port) : this.port;
    return `${this.protocol}//${subdomain}.${this.domain}${chosen ? `:${chosen}` : ''}/`;
  }

  /** The label of a host under the site domain (`demo` for `demo.localhost:8081`), or null when it is not one. */
  siteLabel(host: string): string | null {
    const name = hostName(host);
    const suffix = `.${this.domain}`;
    if (!name.endsWith(suffix)) return null;
    return name.slice(0, -suffix.length);
  }
}

/** A Host header's name: lowercase, without port or trailing dot. */
function hostName(host: string): string {
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d*$/, '');
  return name.toLowerCase().replace(/\.$/, '');
}

const summaryColumns = 'subdomain, title, octet_length(html) as bytes, etag, created_at, updated_at';

const statements = {
  create: {
    name: 'site-create',
    text: `insert into published_sites (subdomain, user_id, title, html, etag, publish_key, created_at, updated_at)
           values ($1, $2, $3, $4, $5, null, now(), now())
           on conflict (subdomain) do nothing
           returning ${summaryColumns}`,
  },
  publish: {
    name: 'site-publish',
    text: `insert into published_sites (subdomain, user_id, title, html, etag, publish_key, created_at, updated_at)
           values ($1, $2, $3, $4, $5, $6, now(), now())
           on conflict (subdomain) do update
             set title = excluded.title, html = excluded.html, etag = excluded.etag,
                 publish_key = excluded.publish_key, updated_at = now()
             where published_sites.user_id = excluded.user_id
               and published_sites.publish_key is distinct from excluded.publish_key
           returning ${summaryColumns}, (xmax = 0) as created`,
  },
  owner: {
    name: 'site-owner',
    text: `select user_id, publish_key, ${summaryColumns} from published_sites where subdomain = $1`,
  },
  update: {
    name: 'site-update',
    text: `update published_sites
           set title = coalesce($3, title), html = coalesce($4, html), etag = coalesce($5, etag),
               updated_at = now()
           where subdomain = $1 and user_id = $2
           returning ${summaryColumns}`,
  },
  remove: {
    name: 'site-delete',
    text: 'delete from published_sites where subdomain = $1 and user_id = $2',
  },
  list: {
    name: 'site-list',
    text: `select ${summaryColumns} from published_sites where user_id = $1 order by updated_at desc, subdomain`,
  },
  serve: {
    name: 'site-serve',
    text: 'select html, etag, updated_at from published_sites where subdomain = $1',
  },
} as const;

interface SummaryRow {
  subdomain: string;
  title: string;
  bytes: number;
  etag: string;
  created_at: Date;
  updated_at: Date;
}

export class SiteStore {
  readonly urls: SiteUrls;
  readonly maxBytes: number;
  private readonly pool: Pool;

  constructor(options: { pool: Pool; urls: SiteUrls; maxBytes?: number }) {
    this.pool = options.pool;
    this.urls = options.urls;
    this.maxBytes = options.maxBytes ?? SITE_DEFAULT_MAX_BYTES;
  }

  /** Publishes a new site; refused when the name is taken (by someone else, or by the caller: `yours`). */
  async create(userId: string, input: SiteInput, port?: number): Promise<CreateOutcome> {
    const site = this.checked(input);
    const [row] = await run<SummaryRow>(this.pool, statements.create, [
      site.subdomain,
      userId,
      site.title,
      site.html,
      etagOf(site.html),
    ]);
    if (row) return { site: this.view(row, port) };
    const [owner] = await run<{ user_id: string }>(this.pool, statements.owner, [site.subdomain]);
    // Deleted in between: the name is free again, but this attempt saw it taken.
    return { refused: owner?.user_id === userId ? 'yours' : 'taken' };
  }

  /**
   * `ToolServices['sites']`: publishes, replacing the user's own site of that name; once per `callKey`: a retry of
   * the same call changes nothing, even after the user edited the site in between (an HTTP update keeps the key).
   * Throws RangeError when the name is someone else's.
   */
  async publish(userId: string, input: SiteInput, callKey: string): Promise<{ url: string; created: boolean }> {
    const site = this.checked(input);
    const [row] = await run<SummaryRow & { created: boolean }>(this.pool, statements.publish, [
      site.subdomain,
      userId,
      site.title,
      site.html,
      etagOf(site.html),
      callKey,
    ]);
    if (row) return { url: this.urls.url(row.subdomain), created: row.created };
    const [owner] = await run<{ user_id: string; publish_key: string | null }>(this.pool, statements.owner, [
      site.subdomain,
    ]);
    if (owner?.user_id === userId && owner.publish_key === callKey) {
      return { url: this.urls.url(site.subdomain), created: false };
    }
    throw new RangeError(`the subdomain '${site.subdomain}' is taken; choose another`);
  }

  /** Replaces the html and/or title of the user's site; null when the user has no site of that name. */
  async update(
    userId: string,
    subdomain: string,
    changes: { title?: string; html?: string },
    port?: number,
  ): Promise<SiteSummary | null> {
    if (changes.title !== undefined) checkTitle(changes.title);
    if (changes.html !== undefined) this.checkHtml(changes.html);
    const [row] = await run<SummaryRow>(this.pool, statements.update, [
      subdomain,
      userId,
      changes.title?.trim() ?? null,
      changes.html ?? null,
      changes.html === undefined ? null : etagOf(changes.html),
    ]);
    return row ? this.view(row, port) : null;
  }

  /** Deletes the user's site; false when the user has no site of that name. */
  async delete(userId: string, subdomain: string): Promise<boolean> {
    const result = await this.pool.query({
      name: statements.remove.name,
      text: statements.remove.text,
      values: [subdomain, userId],
    });
    return (result.rowCount ?? 0) > 0;
  }

  /** The user's sites, most recently changed first (without their html). */
  async list(userId: string, port?: number): Promise<SiteSummary[]> {
    const rows = await run<SummaryRow>(this.pool, statements.list, [userId]);
    return rows.map((row) => this.view(row, port));
  }

  /** The site published on `subdomain`, to serve; null when there is none. */
  async serve(subdomain: string): Promise<ServedSite | null> {
    if (!subdomainPattern.test(subdomain)) return null;
    const [row] = await run<{ html: string; etag: string; updated_at: Date }>(this.pool, statements.serve, [subdomain]);
    return row ? { html: row.html, etag: row.etag, updatedAt: row.updated_at } : null;
  }

  private checked(input: SiteInput): SiteInput {
    const problem = subdomainProblem(input.subdomain);
    if (problem) throw new RangeError(problem);
    checkTitle(input.title);
    this.checkHtml(input.html);
    return { subdomain: input.subdomain, title: input.title.trim(), html: input.html };
  }

  private checkHtml(html: string): void {
    if (typeof html !== 'string' || html.length === 0) throw new RangeError('html must be a non-empty string');
    const bytes = Buffer.byteLength(html, 'utf8');
    if (bytes > this.maxBytes) {
      throw new RangeError(`html is ${bytes} bytes; a site holds at most ${this.maxBytes} bytes (SITE_MAX_BYTES)`);
    }
    if (html.includes('\u0000')) throw new RangeError('html must not contain NUL characters');
  }

  private view(row: SummaryRow, port?: number): SiteSummary {
    return {
      subdomain: row.subdomain,
      title: row.title,
      url: this.urls.url(row.subdomain, port),
      bytes: Number(row.bytes),
      etag: row.etag,
      created_at: row.created_at.toISOString(),
      updated_at: row.updated_at.toISOString(),
    };
  }
}

function checkTitle(title: string): void {
  const trimmed = title.trim();
  if (trimmed.length === 0 || trimmed.length > SITE_TITLE_MAX_CHARS) {
    throw new RangeError(`a title holds 1 to ${SITE_TITLE_MAX_CHARS} characters`);
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(trimmed)) throw new RangeError('a title must not contain control characters');
}

/** The html's validator: SHA-256, base64url (served quoted, as an ETag). */
export function etagOf(html: string): string {
  return createHash('sha256').update(html, 'utf8').digest('base64url');
}
