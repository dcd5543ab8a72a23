import { defineEntity, p } from '@mikro-orm/core';

/**
 * An inbound webhook as its owner configured it (docs/webhooks.md; activities/webhooks/webhook-store.ts,
 * plain SQL): a Standard Webhooks receiver of one agent, or a GitHub repository's webhook mapped to an agent.
 * Secrets and the GitHub token are stored encrypted (AES-256-GCM under a key derived from TOKEN_ENCRYPTION_KEY); a
 * rotation keeps the previous secret valid for a grace period (`rotatedAt`). One GitHub webhook per owner and
 * repository (a standard webhook has no repository, and NULLs never collide in the unique index).
 */
export const InboundWebhook = defineEntity({
  name: 'InboundWebhook',
  tableName: 'inbound_webhooks',
  properties: {
    /** `whk_` + 16 base64url characters. */
    id: p.string().primary(),
    userId: p.string(),
    /** `standard` or `github`. */
    source: p.string(),
    agentId: p.string(),
    /** `owner/name`, lower-cased (github). */
    repository: p.string().nullable(),
    secret: p.text(),
    previousSecret: p.text().nullable(),
    rotatedAt: p.datetime().nullable(),
    githubToken: p.text().nullable(),
    commentWithoutApproval: p.boolean(),
    forwardToMessengers: p.boolean(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [{ properties: ['userId', 'createdAt'] }],
  uniques: [{ properties: ['userId', 'repository'] }],
});

/**
 * One accepted inbound webhook delivery and its run (api/services/webhooks/runs.ts, plain SQL): the row is written
 * once the sender's signature is verified, and its id is the run's workflow id, `webhook-<agent>-<delivery id>`, so
 * a redelivery finds it. The run records its status, turn, answer or error here; an automation run's callback its
 * attempts (`callbackWanted`: the caller stopped waiting and is owed the callback).
 */
export const WebhookRun = defineEntity({
  name: 'WebhookRun',
  tableName: 'webhook_runs',
  properties: {
    id: p.string().primary(),
    /** Null until a Slack chat's owner is known. */
    userId: p.string().nullable(),
    /** `standard`, `github`, `slack` or `automation`. */
    source: p.string(),
    webhookId: p.string().nullable(),
    /** Null until a Slack message is routed. */
    agentId: p.string().nullable(),
    deliveryId: p.string(),
    sessionKey: p.string(),
    message: p.text(),
    options: p.json<Record<string, unknown>>(),
    callbackUrl: p.text().nullable(),
    callbackWanted: p.boolean(),
    /** `pending`, `delivered` or `failed`. */
    callbackStatus: p.string().nullable(),
    callbackAttempts: p.integer(),
    callbackError: p.text().nullable(),
    /** `queued`, `running`, `done` or `failed`. */
    status: p.string(),
    turnId: p.string().nullable(),
    answer: p.text().nullable(),
    error: p.text().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    finishedAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['userId', 'createdAt'] }],
});
