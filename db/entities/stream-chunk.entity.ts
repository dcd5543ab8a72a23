import { defineEntity, p } from '@mikro-orm/core';

/**
 * The stream journal: SSE events of a streamed completion, in order. Lets a client resume with
 * `Last-Event-ID`, lets a replica that did not run the provider call relay it, and lets an operator read
 * what was sent. Tokens live here, never in workflow history.
 */
export const StreamChunk = defineEntity({
  name: 'StreamChunk',
  tableName: 'stream_chunks',
  properties: {
    requestId: p.string().primary(),
    seq: p.integer().primary(),
    data: p.text(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  primaryKeys: ['requestId', 'seq'],
});
