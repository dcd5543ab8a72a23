/**
 * The Responses door: OpenAI's Responses API (`/v1/responses`) on the platform's one completion path. A Response is a
 * completion (the same plan, admission, workflow `completion-resp_…`, failover, ledger and stream journal as
 * `/v1/chat/completions`, charged as one) whose workflow also keeps the response's row (activities/responses/): the
 * platform stores the conversation (`previous_response_id`), unless `store: false`.
 *
 * **Background mode** (`background: true`): the response is answered at once, `queued`, and its workflow runs on any
 * worker (not eagerly here); `GET /v1/responses/{id}` shows `queued → in_progress → completed | incomplete | failed |
 * cancelled`; `POST /v1/responses/{id}/cancel` stops it (the `cancelResponse` signal, and the stop of a call already
 * streaming: activities/streaming/turn-stops.ts), settled at what it used. A background response always streams into
 * the journal, so `GET /v1/responses/{id}?stream=true&starting_after=N` reads its events again, numbered as at first,
 * also after a restart of the whole platform. Errors are the platform's envelope, OpenAI's shape.
 */
import Router from '@koa/router';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Context } from 'koa';
import { completionWorkflowId } from '../../../../common/completion.ts';
import { finishedStatus, outputItems, responseUsage } from '../../../../common/responses.ts';
import type { ChatMessage } from '../../../../common/chat.ts';
import type { ResponseStore } from '../../../../activities/responses/response-store.ts';
import type { TurnStops } from '../../../../activities/streaming/turn-stops.ts';
import { cancelResponseSignal } from '../../../../workflows/completion.workflow.ts';
import type { AuthState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import { presentPage } from '../../../openapi/contract.ts';
import { priorityOfServiceTier } from '../../../../common/capacity.ts';
import type { CapacityQueue } from '../../../../activities/capacity/capacity-queue.ts';
import { relayStream, serveCompletion, type CompletionDoor } from '../completions/relay.ts';
import type { CompletionService } from '../completions/service.ts';
import {
  inputItemsQuerySchema,
  responseRequestSchema,
  retrieveQuerySchema,
} from '../../../../common/doors/responses/schema.ts';
import { renderResponseEvents } from './stream.ts';
import {
  chainMessages,
  echoed,
  presentResponse,
  storedItems,
  toCompletionRequest,
  type ResponseView,
  type StoredItem,
} from '../../../../common/doors/responses/translate.ts';

export interface ResponseDoor extends CompletionDoor {
  responses: ResponseStore;
  capacity: CapacityQueue;
  client: Client;
  stops: TurnStops;
}

/** How long a cancel waits for the response's workflow to record its end before answering as things stand. */
const cancelWaitMs = 10_000;

/** `POST /v1/responses`: mounted with `/v1/chat/completions`, rate limited by its admission as a completion is. */
export function responseCreateRoutes(door: ResponseDoor) {
  const routes = new Router<AuthState>();

  routes.post('/v1/responses', async (context) => {
    const parsed = responseRequestSchema.safeParse(context.request.body);
    if (!parsed.success) throw invalidRequest(parsed.error);
    const body = parsed.data;
    const { principal } = context.state;
    const store = body.store !== false;
    const background = body.background === true;
    if (background && !store) {
      throw new ApiError('invalid_request', 'A background response is stored: store must not be false', {
        param: 'store',
      });
    }
    let history: ChatMessage[] = [];
    if (body.previous_response_id) {
      const chain = await door.responses.chain(principal.userId, body.previous_response_id);
      const previous = chain.at(-1);
      if (!previous) {
        throw new ApiError('not_found', `No response ${body.previous_response_id}`, { param: 'previous_response_id' });
      }
      if (previous.status !== 'completed' && previous.status !== 'incomplete') {
        throw new ApiError(
          'invalid_request',
          `Response ${previous.id} is ${previous.status}: continue from a response that has finished`,
          { param: 'previous_response_id' },
        );
      }
      history = chainMessages(chain);
    }
    const items = storedItems(body.input);
    const stream = body.stream === true;
    // A background response always streams into the journal: its events can be read again, and it can be stopped.
    const request = toCompletionRequest(body, history, items, background || stream);
    const view = (id: string): ResponseView => ({
      id,
      status: background ? 'queued' : 'in_progress',
      background,
      model: body.model,
      servedModel: null,
      previousResponseId: body.previous_response_id ?? null,
      instructions: body.instructions ?? null,
      request: echoed(body),
      output: null,
      usage: null,
      error: null,
      incompleteDetails: null,
      createdAt: new Date(),
      completedAt: null,
    });
    const row = (id: string) => ({ ...view(id), userId: principal.userId, stream, inputItems: items });
    await serveCompletion(context, door, request, {
      idPrefix: 'resp_',
      kind: 'response',
      summary: background ? 'Response, in the background' : 'Response',
      eager: background ? false : undefined,
      ...(store ? { response: { background, priority: priorityOfServiceTier(body.service_tier) } } : {}),
      // The row is written before the workflow starts: in the admission's statement, with the hold, when there is
      // one; else on its own.
      ...(store ? { admittedWrite: (id: string) => door.responses.admitted(row(id)) } : {}),
      ...(background && !stream ? { accepted: (started) => presentResponse(view(started.requestId)) } : {}),
      // A stored response's end is written with its call's settlement before the answer gets here
      // (activities/provider-calls.ts, `closeResponse`): a client that reads it at once reads it ended.
      present: (started, answer) => {
        const status = finishedStatus(answer.finishReason, false);
        return presentResponse({
          ...view(started.requestId),
          status,
          servedModel: answer.model,
          output: outputItems(started.requestId, answer.message, status === 'completed'),
          usage: responseUsage(answer.usage),
          incompleteDetails: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
          completedAt: new Date(),
        });
      },
      renderer: (started) => renderResponseEvents(view(started.requestId), { stored: store }),
    });
  });

  return routes;
}

/** Reading, resuming, listing the input of, deleting and cancelling stored responses (keyed routes; owner only). */
export function responseRoutes(door: ResponseDoor, completions: CompletionService) {
  const routes = new Router<AuthState>();

  const owned = async (context: Context) => {
    const { principal } = context.state as AuthState;
    const id = (context.params as { id: string }).id;
    const row = await door.responses.get(principal.userId, id);
    if (!row) throw new ApiError('not_found', `No response ${id}`);
    return row;
  };

  routes.get('/v1/responses/:id', async (context) => {
    const query = retrieveQuerySchema.safeParse(context.query);
    if (!query.success) throw invalidRequest(query.error);
    const row = await owned(context);
    if (query.data.stream !== 'true') {
      // A queued background response says where it stands in the capacity queue (docs/capacity-queue.md).
      const position = row.status === 'queued' ? await door.capacity.position(completionWorkflowId(row.id)) : null;
      context.body = { ...presentResponse(row), ...(position ? { queue_position: position } : {}) };
      return;
    }
    if (!row.stream) {
      throw new ApiError('invalid_request', `Response ${row.id} was not streamed: read it without stream=true`, {
        param: 'stream',
      });
    }
    const { principal } = context.state;
    const started = await completions.rejoin(principal.userId, principal.operator, row.id);
    const startingAfter = query.data.starting_after === undefined ? -1 : Number(query.data.starting_after);
    await relayStream(context, completions, door.openStreams, started, renderResponseEvents(row, { startingAfter }));
  });

  routes.delete('/v1/responses/:id', async (context) => {
    const row = await owned(context);
    await door.responses.delete(row.userId, row.id);
    context.body = { id: row.id, object: 'response', deleted: true };
  });

  routes.get('/v1/responses/:id/input_items', async (context) => {
    const query = inputItemsQuerySchema.safeParse(context.query);
    if (!query.success) throw invalidRequest(query.error);
    const row = await owned(context);
    const { after, limit = 20, order = 'desc' } = query.data;
    const ordered =
      order === 'desc' ? [...(row.inputItems as StoredItem[])].reverse() : (row.inputItems as StoredItem[]);
    const from = after === undefined ? 0 : ordered.findIndex((item) => item.id === after) + 1;
    if (after !== undefined && from === 0) {
      throw new ApiError('invalid_request', `No input item ${after} in response ${row.id}`, { param: 'after' });
    }
    context.body = presentPage(ordered.slice(from, from + limit), from + limit < ordered.length);
  });

  routes.post('/v1/responses/:id/cancel', async (context) => {
    const row = await owned(context);
    if (!row.background) {
      throw new ApiError('invalid_request', `Response ${row.id} is not a background response: only those cancel`);
    }
    if (row.status === 'queued' || row.status === 'in_progress') {
      const workflowId = completionWorkflowId(row.id);
      const handle = door.client.workflow.getHandle(workflowId);
      try {
        await handle.signal(cancelResponseSignal);
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      }
      // A call already streaming hears it directly (the signal reaches the workflow only between its tasks).
      await door.stops.stop(workflowId);
      await Promise.race([
        handle.result().catch(() => undefined),
        new Promise((resolve) => setTimeout(resolve, cancelWaitMs).unref()),
      ]);
    }
    context.body = presentResponse((await door.responses.get(row.userId, row.id)) ?? row);
  });

  return routes;
}
