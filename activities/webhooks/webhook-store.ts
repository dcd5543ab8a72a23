/**
 * Inbound webhooks as their owners configure them (docs/webhooks.md), in `inbound_webhooks`:
 *
 * - `standard`: `POST /webhook/{agent_id}?hook=<id>` wakes the agent with the body, signed by Standard Webhooks with
 *   the webhook's secret (`whsec_…`); `forward_to_messengers` sends each answer to the owner's linked chats too.
 * - `github`: a plain repository webhook (not a GitHub App: nothing to register with GitHub beyond the repository's
 *   own webhook settings, and no app key for the operator to keep), `POST /webhook/github?hook=<id>`, signed with
 *   the webhook's secret in `X-Hub-Signature-256`; one per owner and repository (`owner/name`, lower-cased: GitHub's
 *   names are case-insensitive), mapped to one agent. The owner's GitHub token (a fine-grained personal access token
 *   with the repository's Issues and Pull requests write permission) lets the agent comment back with
 *   `github_comment`, which needs the owner's approval unless `comment_without_approval` is set.
 *
 * Secrets are made here and shown once (at creation, and at each rotation); they are stored encrypted (the OAuth
 * tokens' AES-256-GCM cipher, under a key of their own: `webhookEncryptionKey`), since verifying an HMAC needs the
 * secret itself, not a hash of it. A rotation keeps the previous secret valid for
 * `rotationGraceMs` (24 hours, as media callback secrets), so a sender can be switched over without losing a
 * delivery. The GitHub token is stored encrypted the same way and never shown again.
 */
import { randomBytes } from 'node:crypto';
import { run, type Pool } from '../../db/pool.ts';
import { rotationGraceMs } from '../media/callbacks.ts';
import { newWebhookSecret } from '../net/standard-webhooks.ts';

export type WebhookSource = 'standard' | 'github';

export interface WebhookView {
  id: string;
  source: WebhookSource;
  agent_id: string;
  /** `owner/name` (github). */
  repository: string | null;
  forward_to_messengers: boolean;
  /** github: whether a token lets the agent comment back. */
  can_comment: boolean;
  comment_without_approval: boolean;
  /** Set for `rotationGraceMs` after a rotation: until then the previous secret is accepted too. */
  previous_secret_valid_until: string | null;
  created_at: string;
}

/** A webhook as a delivery needs it: its owner, agent and the secrets a delivery may be signed with. */
export interface DeliveryWebhook {
  id: string;
  userId: string;
  source: WebhookSource;
  agentId: string;
  repository: string | null;
  forwardToMessengers: boolean;
  commentWithoutApproval: boolean;
  canComment: boolean;
  /** The current secret, then the previous one while its grace lasts. */
  secrets: string[];
}

interface Row {
  id: string;
  user_id: string;
  source: WebhookSource;
  agent_id: string;
  repository: string | null;
  secret: string;
  previous_secret: string | null;
  rotated_at: Date | null;
  github_token: string | null;
  comment_without_approval: boolean;
  forward_to_messengers: boolean;
  created_at: Date;
}

const columns = `id, user_id, source, agent_id, repository, secret, previous_secret, rotated_at, github_token,
  comment_without_approval, forward_to_messengers, created_at`;

const statements = {
  insert: {
    name: 'inbound-webhooks-insert',
    text: `insert into inbound_webhooks (id, user_id, source, agent_id, repository, secret, github_token,
             comment_without_approval, forward_to_messengers, created_at)
           values ($1, $2, $3, $4, $5, $6, $7, $8, $9, now())
           on conflict do nothing returning ${columns}`,
  },
  list: {
    name: 'inbound-webhooks-list',
    text: `select ${columns} from inbound_webhooks where user_id = $1 order by created_at, id`,
  },
  get: {
    name: 'inbound-webhooks-get',
    text: `select ${columns} from inbound_webhooks where id = $1 and user_id = $2`,
  },
  byId: { name: 'inbound-webhooks-by-id', text: `select ${columns} from inbound_webhooks where id = $1` },
  rotate: {
    name: 'inbound-webhooks-rotate',
    text: `update inbound_webhooks set previous_secret = secret, secret = $3, rotated_at = now()
           where id = $1 and user_id = $2 returning ${columns}`,
  },
  delete: { name: 'inbound-webhooks-delete', text: 'delete from inbound_webhooks where id = $1 and user_id = $2' },
  token: {
    name: 'inbound-webhooks-github-token',
    text: `select github_token from inbound_webhooks where user_id = $1 and source = 'github' and repository = $2`,
  },
} as const;

/** A repository's full name as GitHub writes it: `owner/name`. */
export const repositoryPattern = /^[A-Za-z0-9_.-]{1,100}\/[A-Za-z0-9_.-]{1,100}$/;

/**
 * What encrypts values at rest: the OAuth tokens' AES-256-GCM cipher (TokenCipher), keyed for webhooks alone (the
 * worker's dependencies make it: worker/create-worker.ts).
 */
export interface ValueCipher {
  encrypt(plain: string): string;
  decrypt(stored: string): string;
}

/**
 * The key webhooks' values are encrypted under: derived (by the cipher's HKDF) from TOKEN_ENCRYPTION_KEY with a
 * suffix naming the purpose, so an OAuth token's ciphertext never decrypts as a webhook secret or the other way round.
 */
export function webhookEncryptionKey(tokenEncryptionKey: string): string {
  return `${tokenEncryptionKey}:inbound-webhooks`;
}

export class WebhookStore {
  private readonly pool: Pool;
  private readonly cipher: ValueCipher;

  constructor(pool: Pool, cipher: ValueCipher) {
    this.pool = pool;
    this.cipher = cipher;
  }

  /** A new webhook and its secret (shown once); null when the owner already has one for that repository. */
  async create(
    userId: string,
    webhook: {
      source: WebhookSource;
      agentId: string;
      repository?: string;
      githubToken?: string;
      commentWithoutApproval?: boolean;
      forwardToMessengers?: boolean;
    },
  ): Promise<{ view: WebhookView; secret: string } | null> {
    const secret = webhook.source === 'github' ? randomBytes(32).toString('hex') : newWebhookSecret();
    const [row] = await run<Row>(this.pool, statements.insert, [
      `whk_${randomBytes(12).toString('base64url')}`,
      userId,
      webhook.source,
      webhook.agentId,
      webhook.repository?.toLowerCase() ?? null,
      this.cipher.encrypt(secret),
      webhook.githubToken ? this.cipher.encrypt(webhook.githubToken) : null,
      webhook.commentWithoutApproval ?? false,
      webhook.forwardToMessengers ?? false,
    ]);
    return row ? { view: viewOf(row), secret } : null;
  }

  async list(userId: string): Promise<WebhookView[]> {
    return (await run<Row>(this.pool, statements.list, [userId])).map(viewOf);
  }

  async get(userId: string, id: string): Promise<WebhookView | null> {
    const [row] = await run<Row>(this.pool, statements.get, [id, userId]);
    return row ? viewOf(row) : null;
  }

  /** A new secret (shown once); the previous one stays valid for `rotationGraceMs`. Null: not the owner's. */
  async rotate(userId: string, id: string): Promise<{ view: WebhookView; secret: string } | null> {
    const current = await this.get(userId, id);
    if (!current) return null;
    const secret = current.source === 'github' ? randomBytes(32).toString('hex') : newWebhookSecret();
    const [row] = await run<Row>(this.pool, statements.rotate, [id, userId, this.cipher.encrypt(secret)]);
    return row ? { view: viewOf(row), secret } : null;
  }

  async delete(userId: string, id: string): Promise<boolean> {
    return ((await this.pool.query({ ...statements.delete, values: [id, userId] })).rowCount ?? 0) > 0;
  }

  /** The webhook a delivery names, with its secrets decrypted; null when there is none. */
  async forDelivery(id: string): Promise<DeliveryWebhook | null> {
    const [row] = await run<Row>(this.pool, statements.byId, [id]);
    if (!row) return null;
    const secrets = [this.cipher.decrypt(row.secret)];
    if (row.previous_secret && inGrace(row.rotated_at)) secrets.push(this.cipher.decrypt(row.previous_secret));
    return {
      id: row.id,
      userId: row.user_id,
      source: row.source,
      agentId: row.agent_id,
      repository: row.repository,
      forwardToMessengers: row.forward_to_messengers,
      commentWithoutApproval: row.comment_without_approval,
      canComment: row.github_token !== null,
      secrets,
    };
  }

  /** The owner's GitHub token for a repository they configured (the github_comment tool's), or null. */
  async githubToken(userId: string, repository: string): Promise<string | null> {
    const [row] = await run<{ github_token: string | null }>(this.pool, statements.token, [
      userId,
      repository.toLowerCase(),
    ]);
    return row?.github_token ? this.cipher.decrypt(row.github_token) : null;
  }
}

function inGrace(rotatedAt: Date | null): boolean {
  return rotatedAt !== null && Date.now() - rotatedAt.getTime() < rotationGraceMs;
}

function viewOf(row: Row): WebhookView {
  return {
    id: row.id,
    source: row.source,
    agent_id: row.agent_id,
    repository: row.repository,
    forward_to_messengers: row.forward_to_messengers,
    can_comment: row.github_token !== null,
    comment_without_approval: row.comment_without_approval,
    previous_secret_valid_until:
      row.previous_secret && inGrace(row.rotated_at)
        ? new Date(row.rotated_at!.getTime() + rotationGraceMs).toISOString()
        : null,
    created_at: row.created_at.toISOString(),
  };
}
