import { defineEntity, p } from '@mikro-orm/core';

/**
 * A user's long-term memory (spec 4.4): something worth remembering across conversations, added by the user
 * (POST /memory/add) or saved by an agent (the save_memory tool). `importance` is 0..1 and orders the list.
 * Reads and writes go through activities/memory/memory-store.ts (plain SQL); `search` is the full-text index of
 * `content`, computed by PostgreSQL (a generated column: never written).
 */
export const Memory = defineEntity({
  name: 'Memory',
  tableName: 'memories',
  properties: {
    /** `mem_…` */
    id: p.string().primary(),
    userId: p.string(),
    content: p.text(),
    /** SHA-256 of the normalised content (trimmed, spaces collapsed, lowercase): one memory per content per user. */
    contentHash: p.string(),
    importance: p.double(),
    /** `user` or `agent`. */
    source: p.string(),
    createdAt: p.datetime().onCreate(() => new Date()),
    search: p
      .type('tsvector')
      .columnType('tsvector')
      .generated("(to_tsvector('english', content)) stored")
      .nullable()
      .lazy(),
  },
  indexes: [
    { name: 'memories_user_id_importance_index', properties: ['userId', 'importance', 'createdAt'] },
    { name: 'memories_search_index', properties: ['search'], type: 'fulltext' },
  ],
  uniques: [{ name: 'memories_user_id_content_hash_unique', properties: ['userId', 'contentHash'] }],
});
