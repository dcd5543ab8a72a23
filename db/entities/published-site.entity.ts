import { defineEntity, p } from '@mikro-orm/core';

/**
 * A published site (spec 4.6): one HTML document served on `<subdomain>.<SITE_DOMAIN>`, owned by the user who
 * published it (`POST /deploy/site` or the publish_site tool). The subdomain is the key: one owner per name.
 * `etag` is the SHA-256 of the html (base64url), the validator served with it; `publishKey` is the last tool call that
 * wrote the site (`null` when none did), so a retried call publishes once. Reads and writes go through
 * activities/sites/site-store.ts (plain SQL).
 */
export const PublishedSite = defineEntity({
  name: 'PublishedSite',
  tableName: 'published_sites',
  properties: {
    /** A DNS label: `[a-z0-9]`, `-` inside, 1 to 63 characters. */
    subdomain: p.string().primary(),
    userId: p.string().index(),
    title: p.string(),
    html: p.text(),
    etag: p.string(),
    publishKey: p.string().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
