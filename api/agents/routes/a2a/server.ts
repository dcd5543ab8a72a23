/**
 * The agent service's A2A server (spec 4.7), on the official `@a2a-js/sdk` (protocol v1.0, with its v0.3 compat
 * layer): the SDK's DefaultRequestHandler owns the protocol (task lifecycle, streaming, resubscribe, push configs),
 * and this file gives it our pieces:
 *
 * - `TessaraAgentExecutor`: each message runs as an agent turn through AgentChat (routed, or the agent named by the
 *   message's `metadata.agent_id`), in the session `a2a:<contextId>` so a context's messages share history. The
 *   turn's events become A2A events: `token` → chunks of the artifact `answer`, `tool` → working status updates,
 *   `hitl_required` → `input-required` with a message asking to approve or reject, `cost` → `completed` (the answer
 *   as the final message too), `error` → `failed`. The next message on an `input-required` task decides the waiting
 *   call (text approve/yes or reject/no, or a data part `{approve: boolean}`) through AgentChat.decide, and the task
 *   follows the same turn on from where it stopped.
 * - Every task is also a workflow `a2a-task-<id>` (workflows/a2a-task.workflow.ts) holding its state, turn, waiting
 *   approval and last relayed event: what a resumed or cancelled task reads, in whichever API process it lands.
 * - Tasks and push configs are the SDK's DatabaseTaskStore and DatabasePushNotificationStore over our PostgreSQL
 *   (tables `a2a_tasks`, `a2a_push_configs`), scoped by owner = the calling key's user id: tasks survive a restart,
 *   and another user's task id is TaskNotFound.
 * - Push notifications: `SignedPushSender` posts each event to the task's configured URLs (the SDK's serializers,
 *   v1.0 or v0.3 by the wire version the config came over), signed `X-Tessera-Signature: sha256=<hex HMAC-SHA256 of
 *   the body keyed by the config's token>` (and the token itself as `X-A2A-Notification-Token`), through
 *   checkedFetch (public addresses only; FETCH_ALLOWED_HOSTS excepted), one task's callbacks in event order. A URL
 *   outside those rules is refused when the config is set (`CheckedPushConfigStore`: JSON-RPC invalid params).
 */
import { createHmac, randomUUID } from 'node:crypto';
import type { Client as TemporalClient } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { Role, TaskState, type AgentCard, type Message, type Part, type StreamResponse, type Task } from '@a2a-js/sdk';
import { RequestMalformedError, TaskNotCancelableError } from '@a2a-js/sdk/errors';
import {
  AgentEvent,
  DefaultRequestHandler,
  V1PushNotificationSerializer,
  type AgentExecutor,
  type ExecutionEventBus,
  type PushNotificationSender,
  type PushNotificationSerializer,
  type RequestContext,
  type ServerCallContext,
  type User,
} from '@a2a-js/sdk/server';
import { V03PushNotificationSerializer } from '@a2a-js/sdk/compat/v0_3/server';
import { DatabasePushNotificationStore, DatabaseTaskStore } from '@a2a-js/sdk/server/database';
import { Kysely, PostgresDialect } from 'kysely';
import type { Pool } from 'pg';
import {
  a2aTaskWorkflowId,
  type A2aTaskRecord,
  type A2aTaskState,
  type A2aTaskUpdate,
} from '../../../../common/a2a-task.ts';
import { assertPublicUrl, checkedFetch } from '../../../../activities/net/checked-fetch.ts';
import { UrlRefusedError } from '../../../../activities/net/url-guard.ts';
import { a2aTask, a2aTaskQuery, a2aTaskUpdateSignal } from '../../../../workflows/a2a-task.workflow.ts';
import { kindKey, userKey } from '../../../../common/search-attributes.ts';
import { ApiError } from '../../../errors.ts';
import type { Principal } from '../../../services/apikeys/service.ts';
import type { AgentChat } from '../../../services/agents/agent-chat.ts';
import type { ChatService } from '../../../services/chat/service.ts';
import type { SequencedStreamEvent } from '../../../../common/completion.ts';
import { presentAgentEvent } from '../chat/events.ts';

/** How long answer tokens are gathered into one artifact chunk, and the most characters one holds. */
const chunkWindowMs = 40;
const chunkMaxChars = 1_000;

/** Characters of text a message may carry in all (the chat API's bound); larger is a JSON-RPC invalid-params error. */
export const maxA2aMessageChars = 32_000;

/** The authenticated caller as the SDK sees it: `userName` is the user id (the stores' owner scope). */
export class KeyUser implements User {
  readonly principal: Principal;
  constructor(principal: Principal) {
    this.principal = principal;
  }
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return this.principal.userId;
  }
}

/** A JSON-RPC invalid-params error (-32602) with our message, from inside the executor. */
export class A2aInvalidParams extends Error {
  override readonly name = 'A2aInvalidParams';
}

const stateOf: Record<A2aTaskState, TaskState> = {
  submitted: TaskState.TASK_STATE_SUBMITTED,
  working: TaskState.TASK_STATE_WORKING,
  'input-required': TaskState.TASK_STATE_INPUT_REQUIRED,
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  canceled: TaskState.TASK_STATE_CANCELED,
};

export function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

function agentMessage(taskId: string, contextId: string, text: string): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The text of a message's text parts, joined; and the first data part, if any. */
export function readMessage(message: Message): { text: string; data: unknown } {
  const texts: string[] = [];
  let data: unknown;
  for (const part of message.parts) {
    if (part.content?.$case === 'text') texts.push(part.content.value);
    else if (part.content?.$case === 'data' && data === undefined) data = part.content.value;
  }
  return { text: texts.join('\n').trim(), data };
}

/** An approve/reject decision read from a message, or null when it says neither. */
export function readDecision(message: Message): boolean | null {
  const { text, data } = readMessage(message);
  if (data && typeof data === 'object' && typeof (data as { approve?: unknown }).approve === 'boolean') {
    return (data as { approve: boolean }).approve;
  }
  const word = text.toLowerCase().replace(/[.!]+$/, '');
  if (['approve', 'approved', 'yes', 'y', 'ok'].includes(word)) return true;
  if (['reject', 'rejected', 'no', 'n', 'deny'].includes(word)) return false;
  return null;
}

export interface A2aServerDependencies {
  client: TemporalClient;
  taskQueue: string;
  agentChat: AgentChat;
  chat: ChatService;
  pool: Pool;
  /** Hosts push callbacks may reach although not public (FETCH_ALLOWED_HOSTS). */
  fetchAllowedHosts: string[];
  log: (fields: Record<string, unknown>, message: string) => void;
}

/** Runs A2A messages as agent turns (see the file comment). */
export class TesseraAgentExecutor implements AgentExecutor {
  private readonly dependencies: A2aServerDependencies;
  /** Tasks cancelled through this process: their follow loop stops publishing. */
  private readonly cancelled = new Set<string>();

  constructor(dependencies: A2aServerDependencies) {
    this.dependencies = dependencies;
  }

  execute = async (request: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const principal = principalOf(request.context);
    const { taskId, contextId } = request;
    const message = request.userMessage;
    const { text } = readMessage(message);
    if (text.length > maxA2aMessageChars) {
      throw new A2aInvalidParams(`The message's text is over ${maxA2aMessageChars} characters`);
    }
    const existing = request.task;
    if (existing) {
      const record = await this.record(taskId);
      if (existing.status?.state !== TaskState.TASK_STATE_INPUT_REQUIRED || !record?.approvalId || !record.turnId) {
        throw new A2aInvalidParams(`Task ${taskId} is not waiting for input`);
      }
      const approve = readDecision(message);
      bus.publish(AgentEvent.task(existing));
      if (approve === null) {
        this.status(
          bus,
          taskId,
          contextId,
          'input-required',
          'Answer "approve" or "reject" (or a data part {"approve": true|false}).',
        );
        return;
      }
      await this.update(taskId, { state: 'working', approvalId: null });
      this.status(bus, taskId, contextId, 'working');
      try {
        await this.dependencies.agentChat.decide(principal, record.approvalId, approve);
      } catch (error) {
        // The approval expired or the turn ended meanwhile: the turn's own events say how it finished.
        if (!(error instanceof ApiError)) throw error;
      }
      await this.follow(bus, taskId, contextId, record.turnId, record.seq);
      return;
    }
    if (!text) throw new A2aInvalidParams('The message has no text part');
    const agentId = typeof message.metadata?.agent_id === 'string' ? message.metadata.agent_id : undefined;
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [],
        history: [message],
        metadata: undefined,
      }),
    );
    await this.dependencies.client.workflow.start(a2aTask, {
      workflowId: a2aTaskWorkflowId(taskId),
      taskQueue: this.dependencies.taskQueue,
      args: [{ taskId, contextId, userId: principal.userId }],
      // Searchable in the Temporal UI as what it is: TesseraKind = 'a2a-task', TesseraUser = the caller.
      typedSearchAttributes: [
        { key: kindKey, value: 'a2a-task' },
        { key: userKey, value: principal.userId },
      ],
      staticSummary: `A2A task ${taskId} (context ${contextId}) for ${principal.userId}`,
    });
    let started;
    try {
      started = await this.dependencies.agentChat.start(principal, {
        sessionKey: `a2a:${contextId}`,
        channel: 'api',
        message: text,
        ...(agentId ? { agentId } : {}),
      });
    } catch (error) {
      const reason = error instanceof ApiError ? error.message : 'The agent could not start';
      await this.update(taskId, { state: 'failed' });
      this.status(bus, taskId, contextId, 'failed', reason);
      if (!(error instanceof ApiError)) throw error;
      return;
    }
    await this.update(taskId, { state: 'working', turnId: started.turnId });
    this.status(bus, taskId, contextId, 'working', undefined, {
      turn_id: started.turnId,
      agent_id: started.routed.id,
      agent_name: started.routed.name,
    });
    await this.follow(bus, taskId, contextId, started.turnId, -1, started.events);
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const record = await this.record(taskId);
    if (!record) throw new TaskNotCancelableError(`Task ${taskId} has no running work`);
    this.cancelled.add(taskId);
    if (record.turnId) {
      try {
        await this.dependencies.client.workflow.getHandle(record.turnId).cancel();
      } catch (error) {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      }
    }
    await this.update(taskId, { state: 'canceled', approvalId: null });
    this.status(bus, taskId, record.contextId, 'canceled', 'Cancelled by the caller');
  };

  /** Relays the turn's events from `afterSeq` until it ends or waits for approval. */
  private async follow(
    bus: ExecutionEventBus,
    taskId: string,
    contextId: string,
    turnId: string,
    afterSeq: number,
    /** The turn's events as its start relays them (from its first); absent: read from the journal after `afterSeq`. */
    started?: AsyncGenerator<SequencedStreamEvent>,
  ): Promise<void> {
    let answer = '';
    let chunks = 0;
    // Tokens go out as artifact chunks, gathered for up to `chunkWindowMs`: the SDK saves the whole task at every
    // event, and a save per token was what capped A2A's throughput under load (bench:agents-durable).
    let pending = '';
    let flushedAt = Date.now();
    const flush = () => {
      if (pending === '') return;
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: `answer-${turnId}`,
            name: 'answer',
            description: 'The agent’s answer',
            parts: [textPart(pending)],
            metadata: undefined,
            extensions: [],
          },
          append: chunks++ > 0,
          lastChunk: false,
          metadata: undefined,
        }),
      );
      pending = '';
      flushedAt = Date.now();
    };
    for await (const item of started ?? this.dependencies.chat.events({ turnId, subscription: null }, afterSeq)) {
      if (this.cancelled.has(taskId)) return;
      const payload = presentAgentEvent(item.event);
      if (!payload) continue;
      if (payload.type === 'token') {
        answer += String(payload.text);
        pending += String(payload.text);
        if (Date.now() - flushedAt >= chunkWindowMs || pending.length >= chunkMaxChars) flush();
        continue;
      }
      flush();
      switch (payload.type) {
        case 'tool':
          this.status(bus, taskId, contextId, 'working', undefined, { event: payload });
          break;
        case 'hitl_required':
          await this.update(taskId, { state: 'input-required', approvalId: String(payload.id), seq: item.seq });
          this.status(
            bus,
            taskId,
            contextId,
            'input-required',
            `The agent wants to call ${String(payload.tool)} with ${JSON.stringify(payload.arguments)}. Reply "approve" or "reject" on this task (or a data part {"approve": true|false}) before ${String(payload.expires_at)}.`,
            { event: payload },
          );
          return;
        case 'cost':
          await this.update(taskId, { state: 'completed', seq: item.seq });
          if (chunks > 0) {
            bus.publish(
              AgentEvent.artifactUpdate({
                taskId,
                contextId,
                artifact: {
                  artifactId: `answer-${turnId}`,
                  name: 'answer',
                  description: 'The agent’s answer',
                  parts: [],
                  metadata: undefined,
                  extensions: [],
                },
                append: true,
                lastChunk: true,
                metadata: undefined,
              }),
            );
          }
          this.status(bus, taskId, contextId, 'completed', answer || undefined, { cost: payload });
          return;
        case 'error':
          if (this.cancelled.has(taskId)) return;
          await this.update(taskId, { state: 'failed', seq: item.seq });
          this.status(bus, taskId, contextId, 'failed', String(payload.message), { error_type: payload.error_type });
          return;
        default:
          break;
      }
    }
    flush();
    if (this.cancelled.has(taskId)) return;
    await this.update(taskId, { state: 'failed' });
    this.status(bus, taskId, contextId, 'failed', 'The turn did not finish in time');
  }

  private status(
    bus: ExecutionEventBus,
    taskId: string,
    contextId: string,
    state: A2aTaskState,
    text?: string,
    metadata?: Record<string, unknown>,
  ): void {
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: {
          state: stateOf[state],
          message: text ? agentMessage(taskId, contextId, text) : undefined,
          timestamp: new Date().toISOString(),
        },
        metadata,
      }),
    );
  }

  private async record(taskId: string): Promise<A2aTaskRecord | null> {
    try {
      return await this.dependencies.client.workflow.getHandle(a2aTaskWorkflowId(taskId)).query(a2aTaskQuery);
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return null;
      throw error;
    }
  }

  private async update(taskId: string, update: A2aTaskUpdate): Promise<void> {
    try {
      await this.dependencies.client.workflow.getHandle(a2aTaskWorkflowId(taskId)).signal(a2aTaskUpdateSignal, update);
    } catch (error) {
      // A task whose workflow already ended (terminal) takes no more updates.
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
  }
}

function principalOf(context: ServerCallContext): Principal {
  const user = context.user;
  if (!(user instanceof KeyUser)) throw new Error('A2A request without an authenticated caller');
  return user.principal;
}

/**
 * The push-config store, refusing a callback URL the sender would never reach (a private or otherwise non-public
 * address, bad scheme, credentials, a host that does not resolve) when it is set: a JSON-RPC invalid-params error on
 * the push-config set and on a send carrying the config, rather than a config that silently never delivers.
 */
export class CheckedPushConfigStore extends DatabasePushNotificationStore {
  private readonly allowedHosts: string[];

  constructor(db: ConstructorParameters<typeof DatabasePushNotificationStore>[0], allowedHosts: string[]) {
    super(db, { tableName: 'a2a_push_configs' });
    this.allowedHosts = allowedHosts;
  }

  override async save(...args: Parameters<DatabasePushNotificationStore['save']>): Promise<void> {
    const url = args[2].url;
    try {
      await assertPublicUrl(url, this.allowedHosts);
    } catch (error) {
      const reason =
        error instanceof UrlRefusedError
          ? error.message
          : `${String(url).slice(0, 200)} does not resolve (${(error as { code?: string }).code ?? 'lookup failed'})`;
      throw new RequestMalformedError(`Push notification URL refused: ${reason}`);
    }
    await super.save(...args);
  }
}

/**
 * Posts each task event to the task's push URLs, signed (see the file comment). The SDK fires each send without
 * waiting, so a task's sends are chained here (in the order the events came) and its callbacks arrive in order.
 */
export class SignedPushSender implements PushNotificationSender {
  private readonly store: DatabasePushNotificationStore;
  private readonly fetch: typeof fetch;
  private readonly log: A2aServerDependencies['log'];
  /** Per task, the last send queued: the next one starts when it has finished. */
  private readonly chains = new Map<string, Promise<void>>();
  private readonly serializers: Record<string, PushNotificationSerializer> = {
    '1.0': new V1PushNotificationSerializer(),
    '0.3': new V03PushNotificationSerializer(),
  };

  constructor(store: DatabasePushNotificationStore, allowedHosts: string[], log: A2aServerDependencies['log']) {
    this.store = store;
    this.fetch = checkedFetch(allowedHosts);
    this.log = log;
  }

  send(response: StreamResponse, context: ServerCallContext, task?: Task): Promise<void> {
    const taskId = taskIdOf(response) ?? task?.id;
    if (!taskId) return Promise.resolve();
    // Queued before any await, so the chain keeps the order the SDK called in.
    const queued = (this.chains.get(taskId) ?? Promise.resolve()).then(() =>
      this.deliver(taskId, response, context, task),
    );
    const settled = queued.catch(() => undefined);
    this.chains.set(taskId, settled);
    void settled.then(() => {
      if (this.chains.get(taskId) === settled) this.chains.delete(taskId);
    });
    return queued;
  }

  private async deliver(taskId: string, response: StreamResponse, context: ServerCallContext, task?: Task) {
    const configs = await this.store.loadWithMetadata(taskId, context);
    await Promise.all(
      configs.map(async ({ config, wireVersion }) => {
        const serializer = this.serializers[wireVersion] ?? this.serializers['1.0']!;
        const { body, contentType } = serializer.serialize(response, task);
        const headers: Record<string, string> = { 'Content-Type': contentType };
        if (config.token) {
          headers['X-Tessera-Signature'] = `sha256=${createHmac('sha256', config.token).update(body).digest('hex')}`;
          headers['X-A2A-Notification-Token'] = config.token;
        }
        try {
          const answer = await this.fetch(config.url, {
            method: 'POST',
            headers,
            body,
            signal: AbortSignal.timeout(5_000),
          });
          await answer.body?.cancel();
          if (!answer.ok) this.log({ taskId, url: config.url, status: answer.status }, 'A2A push refused');
        } catch (error) {
          this.log({ taskId, url: config.url, err: error }, 'A2A push failed');
        }
      }),
    );
  }
}

function taskIdOf(response: StreamResponse): string | undefined {
  const payload = response.payload;
  switch (payload?.$case) {
    case 'task':
      return payload.value.id;
    case 'statusUpdate':
    case 'artifactUpdate':
      return payload.value.taskId;
    case 'message':
      return payload.value.taskId || undefined;
    default:
      return undefined;
  }
}

/** The SDK request handler with our executor, PostgreSQL stores and signed push sender. */
export function createA2aHandler(card: () => AgentCard, dependencies: A2aServerDependencies): DefaultRequestHandler {
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: dependencies.pool }) });
  const tasks = new DatabaseTaskStore(db, { tableName: 'a2a_tasks' });
  const pushConfigs = new CheckedPushConfigStore(db, dependencies.fetchAllowedHosts);
  const handler = new DefaultRequestHandler(
    card(),
    tasks,
    new TesseraAgentExecutor(dependencies),
    undefined,
    pushConfigs,
    new SignedPushSender(pushConfigs, dependencies.fetchAllowedHosts, dependencies.log),
  );
  return handler;
}
