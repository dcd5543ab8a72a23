/**
 * What the workspace tools (one file per tool in this folder: gmail_*, calendar_*, drive_*, sheets_*, docs_*,
 * contacts_search, tasks_*) share: the Google service and the user from the tool's context, their retry and
 * configuration rules, and cutting long text with a note.
 *
 * Every tool acts for the signed-in user through `ToolServices['google']` (activities/google/google-api.ts: their
 * OAuth tokens, refreshed as needed; Google's errors as messages the model can act on). Reads run at once; every
 * write (send, draft, create, update, delete, upload, append, complete) is `needsApproval` (the turn waits for the
 * user's decision) and runs once per tool call (`google.once`, keyed by the call). Offered where Google login is
 * configured (GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET, TOKEN_ENCRYPTION_KEY); agents only.
 */
import { z } from 'zod';
import type { GoogleWorkspaceService } from '../../google/google-api.ts';
import { ToolError, type ToolContext, type ToolRetryPolicy } from '../tool.ts';
import type { ToolSettings } from '../../../config/tool-settings.ts';

/** Reads and writes alike: Google's 429s and 5xx pass, so try three times (writes are once-only by call key). */
export const workspaceRetry: ToolRetryPolicy = { maximumAttempts: 3, initialIntervalMs: 1_000 };

export const workspaceConfigured = (settings: ToolSettings): boolean => settings.google !== undefined;

/** What every workspace tool declares alike: the retry above, agents only, offered where Google is configured. */
export const workspaceTool = { retry: workspaceRetry, agentsOnly: true, configured: workspaceConfigured } as const;

/** A workspace write: the same, and the user approves each call first. */
export const workspaceWriteTool = { ...workspaceTool, needsApproval: true } as const;

/** The Google service and the user a workspace read acts for. */
export function workspaceOf(context: ToolContext): { google: GoogleWorkspaceService; userId: string } {
  if (!context.userId) throw new ToolError('the Google workspace needs a signed-in user');
  const google = context.services?.google;
  if (!google) throw new ToolError('Google is not configured on this service');
  return { google, userId: context.userId };
}

/** The same for a write, with the call's key (a write runs once per key). */
export function writeOf(context: ToolContext, tool: string) {
  const workspace = workspaceOf(context);
  if (!context.callKey) throw new ToolError('this call has no idempotency key; nothing was changed');
  return { ...workspace, write: { callKey: context.callKey, userId: workspace.userId, tool } };
}

/**
 * `text` from `offset`, at most `maxChars`, with where to go on: what the read tools answer for a long mail body,
 * document or file (the model reads on with `offset`).
 */
export function cutText(
  text: string,
  offset: number,
  maxChars: number,
): { text: string; offset?: number; total_chars: number; next_offset?: number; note?: string } {
  const part = text.slice(offset, offset + maxChars);
  const end = offset + part.length;
  return {
    text: part,
    ...(offset > 0 ? { offset } : {}),
    total_chars: text.length,
    ...(end < text.length
      ? { next_offset: end, note: `${text.length - end} more characters: call again with offset ${end} to read on` }
      : {}),
  };
}

/** Characters of text a read tool answers per call. */
export const textPageChars = 12_000;

export const offsetInput = z
  .number()
  .int()
  .min(0)
  .optional()
  .describe('Character offset to read from (default 0): a long text is answered in parts');

/** A path segment from the model (an id), encoded. */
export const segment = (value: string): string => encodeURIComponent(value);

/** A Google resource id: letters, digits and the few punctuation marks Google's ids use. */
export const resourceId = (what: string) =>
  z
    .string()
    .trim()
    .min(1)
    .max(512)
    .regex(/^[A-Za-z0-9_.@:#-]+$/, `${what} is an id of letters, digits, - _ . : # and @`)
    .describe(what);
