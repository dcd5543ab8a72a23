import { defineEntity, p } from '@mikro-orm/core';

/**
 * A Response of the Responses door (`/v1/responses`, OpenAI's Responses API): one completion (its workflow is
 * `completion-<id>`) with what the API keeps of it. `status` moves `queued` (a background response waiting for a
 * worker) → `in_progress` → `completed` | `incomplete` (cut by max_output_tokens) | `failed` | `cancelled`; the
 * API writes the row before the workflow starts, the workflow writes each move after (activities/responses/). `request`
 * is what the response echoes (sampling, tools, text format, metadata, …); `inputItems` this response's input as the
 * API lists it (`/input_items`), `output` its output items; with `previousResponseId` the conversation goes on from
 * that response, whose input and output come first. A response created with `store: false` has no row.
 */
export const ModelResponse = defineEntity({
  name: 'ModelResponse',
  tableName: 'model_responses',
  properties: {
    id: p.string().primary(),
    userId: p.string(),
    status: p.string(),
    background: p.boolean(),
    stream: p.boolean(),
    /** The model asked for (`auto`, a pin); `servedModel` the one that answered. */
    model: p.string(),
    servedModel: p.string().nullable(),
    previousResponseId: p.string().nullable(),
    instructions: p.text().nullable(),
    request: p.json<Record<string, unknown>>(),
    inputItems: p.json<unknown[]>(),
    output: p.json<unknown[]>().nullable(),
    usage: p.json<Record<string, unknown>>().nullable(),
    error: p.json<Record<string, unknown>>().nullable(),
    incompleteDetails: p.json<Record<string, unknown>>().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    completedAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['userId', 'createdAt'] }],
});
