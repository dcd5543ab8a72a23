/**
 * The one way the workspace tools (activities/tools/google/) call Google's REST APIs as a user: the URL from the
 * family's real host and path (or all families under GOOGLE_API_BASE_URL: the simulator, a recording proxy), the
 * user's access token (./google-accounts.ts: refreshed when it expires, and once more when Google answers 401 to it),
 * the tool's abort signal, a size limit on what is read, and Google's errors turned into `ToolError`s the model can
 * read and act on:
 *
 * - no Google login, or one Google revoked: "the Google account must be connected again: log in with Google at
 *   <AGENT_PUBLIC_URL>/auth/google" (not a failure of the turn: the model tells the user);
 * - a scope the login did not grant (403 `insufficientPermissions` / `ACCESS_TOKEN_SCOPE_INSUFFICIENT`): log in
 *   again and allow that service;
 * - 404, 400, 409 and other refusals: Google's own message (not retried);
 * - 429, 5xx, timeouts and unreachable hosts: retryable (the tool's retry policy applies).
 *
 * Google's URLs are the operator's configuration, not a user's, so they are fetched directly rather than through the
 * URL guard (activities/net/), which exists for URLs users and models supply.
 *
 * Writes run once per tool call through `once` (./workspace-writes.ts).
 */
import type { WorkspaceName } from '../../common/agents.ts';
import { ToolError } from '../tools/tool.ts';
import { GoogleNotConnectedError, type GoogleAccounts } from './google-accounts.ts';
import { ProviderUnreachableError } from './oauth-client.ts';
import type { WorkspaceWrite, WorkspaceWrites } from './workspace-writes.ts';

/** Google's API families: each at its real host and path, or all under one base URL (GOOGLE_API_BASE_URL). */
export const googleApiFamilies = {
  gmail: { origin: 'https://gmail.googleapis.com', path: '/gmail/v1', name: 'Gmail', workspace: 'mail' },
  calendar: {
    origin: 'https://www.googleapis.com',
    path: '/calendar/v3',
    name: 'Google Calendar',
    workspace: 'calendar',
  },
  drive: { origin: 'https://www.googleapis.com', path: '/drive/v3', name: 'Google Drive', workspace: 'drive' },
  driveUpload: {
    origin: 'https://www.googleapis.com',
    path: '/upload/drive/v3',
    name: 'Google Drive',
    workspace: 'drive',
  },
  sheets: { origin: 'https://sheets.googleapis.com', path: '/v4', name: 'Google Sheets', workspace: 'sheets' },
  docs: { origin: 'https://docs.googleapis.com', path: '/v1', name: 'Google Docs', workspace: 'docs' },
  people: { origin: 'https://people.googleapis.com', path: '/v1', name: 'Google Contacts', workspace: 'contacts' },
  tasks: { origin: 'https://tasks.googleapis.com', path: '/tasks/v1', name: 'Google Tasks', workspace: 'tasks' },
} as const satisfies Record<string, { origin: string; path: string; name: string; workspace: WorkspaceName }>;

export type GoogleApiFamily = keyof typeof googleApiFamilies;

type QueryValue = string | number | boolean | undefined;

export interface GoogleRequest {
  family: GoogleApiFamily;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** After the family's path, e.g. `/users/me/messages`; segments from input must be encoded by the caller. */
  path: string;
  query?: Record<string, QueryValue | QueryValue[]>;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as is (a multipart upload). */
  body?: { contentType: string; data: Uint8Array | string };
  /** How the answer is read: JSON (default), text, bytes, or not at all (a 204). */
  read?: 'json' | 'text' | 'bytes' | 'none';
  /** Statuses answered to the caller instead of thrown (a 409 meaning "already created", a 404 after a delete). */
  accept?: number[];
  /** Bytes read at most (default 25 MB); a longer answer is refused. */
  maxBytes?: number;
}

export interface GoogleResponse {
  status: number;
  // Google's JSON answers, read by each tool through its own fields.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  text: string;
  bytes: Uint8Array;
  contentType: string;
}

/** What the workspace tools get as `ToolServices['google']`. */
export interface GoogleWorkspaceService {
  request(userId: string, request: GoogleRequest, signal: AbortSignal): Promise<GoogleResponse>;
  /**
   * Runs a write once per tool call (`write.callKey`): a call that already ran answers its first result without
   * running again. `effect` learns whether it takes over an attempt that died midway (so it can look for what that
   * attempt did first).
   */
  once<T>(write: WorkspaceWrite, effect: (attempt: { takeover: boolean }) => Promise<T>): Promise<T>;
}

const defaultMaxBytes = 25 * 1024 * 1024;

export class GoogleApi implements GoogleWorkspaceService {
  private readonly accounts: GoogleAccounts;
  private readonly writes: WorkspaceWrites;
  private readonly apiBaseUrl: string | undefined;
  private readonly loginUrl: string;

  constructor(options: { accounts: GoogleAccounts; writes: WorkspaceWrites; apiBaseUrl?: string; loginUrl: string }) {
    this.accounts = options.accounts;
    this.writes = options.writes;
    this.apiBaseUrl = options.apiBaseUrl;
    this.loginUrl = options.loginUrl;
  }

  once<T>(write: WorkspaceWrite, effect: (attempt: { takeover: boolean }) => Promise<T>): Promise<T> {
    return this.writes.once(write, effect);
  }

  async request(userId: string, request: GoogleRequest, signal: AbortSignal): Promise<GoogleResponse> {
    const family = googleApiFamilies[request.family];
    const url = googleApiUrl(this.apiBaseUrl, request.family, request.path, request.query);
    let token = await this.token(userId, undefined);
    let response = await this.send(url, request, token, signal);
    if (response.status === 401) {
      // Expired early, or revoked: a refreshed token tells which (a revoked grant fails its refresh).
      await response.body?.cancel();
      token = await this.token(userId, token);
      response = await this.send(url, request, token, signal);
      if (response.status === 401) {
        await response.body?.cancel();
        throw new ToolError(`${family.name} refused the account's fresh access token (HTTP 401)`);
      }
    }
    const answer = await read(response, request, family.name, signal);
    if (response.ok || request.accept?.includes(response.status)) return answer;
    throw this.refusal(family, response.status, answer);
  }

  private async token(userId: string, rejected: string | undefined): Promise<string> {
    try {
      return await this.accounts.accessToken(userId, rejected === undefined ? {} : { rejected });
    } catch (error) {
      if (error instanceof GoogleNotConnectedError) {
        throw new ToolError(
          error.revoked
            ? `the Google account must be connected again: log in with Google at ${this.loginUrl}, then ask again (Google refused the stored login: access was revoked or has expired)`
            : `the Google account is not connected: log in with Google at ${this.loginUrl}, then ask again`,
          { cause: error },
        );
      }
      if (error instanceof ProviderUnreachableError) {
        throw new ToolError(`Google's sign-in service could not be reached; try again`, {
          retryable: true,
          cause: error,
        });
      }
      throw error;
    }
  }

  private async send(url: URL, request: GoogleRequest, token: string, signal: AbortSignal): Promise<Response> {
    const name = googleApiFamilies[request.family].name;
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    let body: string | Uint8Array | undefined;
    if (request.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(request.json);
    } else if (request.body) {
      headers['content-type'] = request.body.contentType;
      body = request.body.data;
    }
    if ((request.read ?? 'json') === 'json') headers.accept = 'application/json';
    try {
      return await fetch(url, { method: request.method ?? 'GET', headers, body, signal });
    } catch (error) {
      if (signal.aborted) throw new ToolError(`${name} did not answer in time`, { retryable: true, cause: error });
      throw new ToolError(`cannot reach ${name}`, { retryable: true, cause: error });
    }
  }

  private refusal(family: (typeof googleApiFamilies)[GoogleApiFamily], status: number, answer: GoogleResponse) {
    const error = (answer.json as { error?: GoogleError } | undefined)?.error;
    const message = typeof error?.message === 'string' ? error.message : answer.text.slice(0, 300);
    if (status >= 500) return new ToolError(`${family.name} failed (HTTP ${status}); try again`, { retryable: true });
    if (status === 429 || rateLimited(error)) {
      return new ToolError(`${family.name} is rate limiting requests (HTTP ${status}); try again later`, {
        retryable: true,
      });
    }
    if (status === 403 && scopeMissing(error)) {
      return new ToolError(
        `the Google login did not grant access to ${family.name}: log in with Google again at ${this.loginUrl} and allow ${family.name}`,
      );
    }
    if (status === 404) return new ToolError(`${family.name} found no such item (HTTP 404): ${message}`);
    return new ToolError(`${family.name} refused the request (HTTP ${status}): ${message}`);
  }
}

/** A family's URL: its real host, or the configured base URL, then the family's path, `path` and the query. */
export function googleApiUrl(
  apiBaseUrl: string | undefined,
  family: GoogleApiFamily,
  path: string,
  query: GoogleRequest['query'] = {},
): URL {
  const { origin, path: familyPath } = googleApiFamilies[family];
  const base = (apiBaseUrl ?? origin).replace(/\/+$/, '');
  const url = new URL(`${base}${familyPath}${path}`);
  for (const [name, value] of Object.entries(query)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item !== undefined) url.searchParams.append(name, String(item));
    }
  }
  return url;
}

interface GoogleError {
  code?: number;
  message?: string;
  status?: string;
  errors?: Array<{ reason?: string }>;
  details?: Array<{ reason?: string }>;
}

function scopeMissing(error: GoogleError | undefined): boolean {
  const reasons = [...(error?.errors ?? []), ...(error?.details ?? [])].map((item) => item.reason);
  return reasons.includes('insufficientPermissions') || reasons.includes('ACCESS_TOKEN_SCOPE_INSUFFICIENT');
}

function rateLimited(error: GoogleError | undefined): boolean {
  const reasons = (error?.errors ?? []).map((item) => item.reason);
  return reasons.includes('rateLimitExceeded') || reasons.includes('userRateLimitExceeded');
}

async function read(
  response: Response,
  request: GoogleRequest,
  service: string,
  signal: AbortSignal,
): Promise<GoogleResponse> {
  const contentType = response.headers.get('content-type') ?? '';
  const limit = request.maxBytes ?? defaultMaxBytes;
  let bytes: Uint8Array;
  try {
    bytes = await readLimited(response, limit);
  } catch (error) {
    if (error instanceof ToolError) throw error;
    const reason = signal.aborted ? 'did not finish its answer in time' : 'broke off its answer';
    throw new ToolError(`${service} ${reason}`, { retryable: true, cause: error });
  }
  const text = new TextDecoder().decode(bytes);
  let json: unknown;
  if (contentType.includes('json') || (request.read ?? 'json') === 'json') {
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
  }
  if (response.ok && (request.read ?? 'json') === 'json' && json === undefined && response.status !== 204) {
    throw new ToolError(`${service} answered with something other than JSON`);
  }
  return { status: response.status, json, text, bytes, contentType };
}

/** The body, refused past `limit` bytes (by its Content-Length, or as it streams). */
async function readLimited(response: Response, limit: number): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length') ?? NaN);
  const tooLarge = () => new ToolError(`the answer is larger than ${Math.round(limit / 1024 / 1024)} MB: not read`);
  if (declared > limit) {
    await response.body?.cancel();
    throw tooLarge();
  }
  if (!response.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of response.body) {
    length += chunk.byteLength;
    if (length > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
