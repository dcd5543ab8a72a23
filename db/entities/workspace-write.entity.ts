import { defineEntity, p } from '@mikro-orm/core';

/**
 * A write to a user's Google workspace by tool call (activities/google/workspace-writes.ts): claimed before it runs,
 * its result stored once it ran, so the same call (`callKey`, `<turn>:<tool call id>`) never runs twice.
 */
export const WorkspaceWrite = defineEntity({
  name: 'WorkspaceWrite',
  tableName: 'workspace_writes',
  properties: {
    callKey: p.string().primary(),
    userId: p.string(),
    /** The tool that wrote (gmail_send, calendar_create, …). */
    tool: p.string(),
    /** What the tool answered, answered again to a repeat of the call; null while the write runs. */
    result: p.json<unknown>().nullable(),
    claimedAt: p.datetime(),
    doneAt: p.datetime().nullable(),
  },
});
