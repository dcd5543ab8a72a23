/**
 * The one tool interface, for the gateway's session chat and the agent service alike. A tool is a file in
 * activities/tools/ exporting a `ToolDefinition`: its zod input schema is also the JSON schema offered to the model,
 * and the arguments a model produced are checked against it again before the tool runs (a bad one goes back to the
 * model as a tool error). The runtime (runtime.ts) enforces the timeout and the output cap; the workflow applies the
 * retry policy. Tools never see Koa, Temporal or the database: what they need comes in the `ToolContext`.
 */
import type { z } from 'zod';
import type { GoogleWorkspaceService } from '../google/google-api.ts';
import type { FileServices } from '../rag/file-services.ts';
import type { ToolSettings } from '../../config/tool-settings.ts';

export interface ToolRetryPolicy {
  /** Attempts in all (1: never retried). */
  maximumAttempts: number;
  initialIntervalMs: number;
}

/**
 * What tools with effects beyond the sandbox use, given by the process (the tools never open their own connections).
 * Absent in a process that does not offer such tools.
 */
export interface ToolServices {
  /** The caller's long-term memories (activities/memory/). */
  memories?: {
    save(userId: string, content: string, importance: number): Promise<{ id: string }>;
  };
  /** Outgoing mail (activities/mail/). `idempotencyKey` makes a retried send go out once. */
  mail?: {
    send(message: { to: string; subject: string; text: string; idempotencyKey: string }): Promise<{ id: string }>;
  };
  /**
   * The user's data tables (activities/user-data/data-database.ts): one read-only query as the user's own database
   * role (throws an error with a `kind` for a refusal or a failed query), and the list of their tables.
   */
  sql?: {
    query(
      userId: string,
      sql: string,
      params: unknown[],
      options: { maxRows?: number },
    ): Promise<{ columns: Array<{ name: string; type: string }>; rows: unknown[][]; truncated: boolean }>;
    tables(
      userId: string,
    ): Promise<Array<{ name: string; row_count: number; columns: Array<{ name: string; type: string }> }>>;
  };
  /** The user's uploaded files: search over their index, and their text read straight from them (activities/rag/). */
  files?: FileServices;
  /**
   * The user's Google workspace (activities/google/google-api.ts): Google's REST APIs with the user's OAuth tokens,
   * and once-only writes by call key.
   */
  google?: GoogleWorkspaceService;
  /**
   * GitHub comments with the owner's token for a repository they connected (activities/webhooks/): once per
   * `callKey`. Throws GitHubRejection for a refusal retrying cannot change.
   */
  github?: {
    comment(
      userId: string,
      comment: { repository: string; issueNumber: number; body: string },
      callKey: string,
    ): Promise<{ url: string; alreadyPosted: boolean }>;
  };
  /**
   * Published sites (activities/sites/site-store.ts): publishes or replaces the user's own site; once per `callKey`.
   * Throws RangeError for a refused name, title or html.
   */
  sites?: {
    publish(
      userId: string,
      site: { subdomain: string; title: string; html: string },
      callKey: string,
    ): Promise<{ url: string; created: boolean }>;
  };
}

/**
 * How long a tool's engine (the calculator's thread, code_execute's runner with Pyodide or QuickJS) may take to
 * start. A tool's deadline never counts its engine's start-up: the deadline is there to stop runaway code, so it
 * starts when the code does, and a start-up that is merely slow (a busy machine) is waited for, up to this bound.
 * Engines are started ahead of calls where that is cheap (`ToolDefinition.warm`), so a call rarely waits at all.
 */
export const ENGINE_STARTUP_TIMEOUT_MS = 2 * 60_000;

/** A tool's report while it runs. */
export interface ToolProgress {
  text?: string;
  detail?: Record<string, string>;
}

export interface ToolContext {
  /** The conversation the tool runs for: its sandbox directory is derived from this. */
  conversationId: string;
  /** The account the tool acts for (`null` for guests and messaging-app chats without an account). */
  userId?: string | null;
  /** This call's id (the model's tool-call id, unique in its turn): the idempotency key of an outside effect. */
  callKey?: string;
  services?: ToolServices;
  /**
   * Reports progress on the turn's stream as it happens (`tool_progress` events): text as it arrives, and `detail`
   * the tool needs to pick up where it was if its call is run again after a crash. Absent outside a chat turn.
   */
  progress?: (update: ToolProgress) => Promise<void>;
  /** What this call reported before it was interrupted (a worker died mid-call), oldest first; empty on a first run. */
  earlierProgress?: ToolProgress[];
  settings: ToolSettings;
  /** Aborted when the tool's timeout passes or the turn is cancelled. */
  signal: AbortSignal;
}

export interface ToolDefinition<Input extends z.ZodType = z.ZodType> {
  name: string;
  /** What the model reads to decide whether to call it. */
  description: string;
  input: Input;
  /**
   * The whole call at most, enforced by the runtime whatever the tool does. A tool with an engine counts its
   * engine's start-up in (`ENGINE_STARTUP_TIMEOUT_MS` plus its own deadline): the deadline itself, counted from when
   * the code starts, is the tool's to enforce.
   */
  timeoutMs: number;
  retry: ToolRetryPolicy;
  /** Characters of output the model gets at most (the rest is cut with a note). */
  maxOutputChars: number;
  /**
   * Whether a person must approve each call before it runs (sending mail, publishing: anything with an effect
   * outside the conversation). Only the agent service offers such tools: its turns pause for the decision.
   */
  needsApproval?: boolean;
  /** Offered by the agent service only (it needs an account, or services the gateway's session chat lacks). */
  agentsOnly?: boolean;
  /** Whether the deployment can run it (e.g. a search engine is configured); unconfigured tools are not offered. */
  configured(settings: ToolSettings): boolean;
  /**
   * Starts the tool's engine ahead of calls and keeps one ready from then on; every process that runs turns calls
   * it at start (without waiting). Resolves once the engine is ready.
   */
  warm?(settings: ToolSettings): Promise<void>;
  /** Runs the tool; throws `ToolError` for a failure the model should read (bad input, not found, refused). */
  run(input: z.infer<Input>, context: ToolContext): Promise<unknown>;
}

/** A failure the model is told about (and may recover from), as opposed to a crash. */
export class ToolError extends Error {
  override readonly name = 'ToolError';
  /** True when trying again may succeed (a timeout, an upstream 5xx): the workflow's retry policy applies. */
  readonly retryable: boolean;

  constructor(message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.retryable = options.retryable ?? false;
  }
}

/** Defines a tool with its input type inferred from the schema. */
export function defineTool<Input extends z.ZodType>(definition: ToolDefinition<Input>): ToolDefinition<Input> {
  return definition;
}
