/**
 * What a GitHub event says to the agent (docs/webhooks.md, GitHub): which events and actions wake it, the
 * message it reads, and the session the run is a turn of. Pure functions of the event's payload.
 *
 * - `issues` (opened, reopened), `issue_comment` (created, unless it is the agent's own comment coming back: it
 *   carries the tool's marker), `pull_request` (opened, reopened, ready_for_review, synchronize) and `push` wake the
 *   agent; other actions and events are acknowledged and ignored.
 * - An issue's or pull request's events are turns of one session, `github:<owner>:<name>:<number>`, so the agent
 *   sees the thread's earlier events; each push is a session of its own.
 * - The message names the event, the repository, the issue or pull request (title, author, link) and its text (or
 *   the pushed commits), and tells the agent how to comment back when it may; at most `maxMessageChars`.
 */
import { z } from 'zod';
import { commentMarkerPrefix } from '../../../activities/webhooks/github.ts';
import { webhookSessionKey } from './runs.ts';

/** What the chat takes as one message. */
const maxMessageChars = 32_000;
/** The issue's or comment's text at most, so the message keeps its header and instructions. */
const maxBodyChars = 20_000;

const user = z.looseObject({ login: z.string() }).nullish();
const issue = z.looseObject({
  number: z.number().int(),
  title: z.string(),
  body: z.string().nullish(),
  html_url: z.string(),
  user,
  pull_request: z.unknown().optional(),
});
const payloadSchema = z.looseObject({
  action: z.string().optional(),
  repository: z.looseObject({ full_name: z.string() }).optional(),
  sender: user,
  issue: issue.optional(),
  comment: z.looseObject({ body: z.string().nullish(), html_url: z.string(), user }).optional(),
  pull_request: issue
    .extend({
      head: z.looseObject({ ref: z.string() }).optional(),
      base: z.looseObject({ ref: z.string() }).optional(),
    })
    .optional(),
  ref: z.string().optional(),
  compare: z.string().optional(),
  commits: z
    .array(
      z.looseObject({ id: z.string(), message: z.string(), author: z.looseObject({ name: z.string() }).nullish() }),
    )
    .optional(),
  zen: z.string().optional(),
});

export type GitHubPayload = z.infer<typeof payloadSchema>;

export function parseGitHubPayload(
  value: unknown,
): { ok: true; payload: GitHubPayload } | { ok: false; error: z.ZodError } {
  const parsed = payloadSchema.safeParse(value);
  return parsed.success ? { ok: true, payload: parsed.data } : { ok: false, error: parsed.error };
}

const wakingActions: Record<string, string[] | null> = {
  issues: ['opened', 'reopened'],
  issue_comment: ['created'],
  pull_request: ['opened', 'reopened', 'ready_for_review', 'synchronize'],
  push: null,
};

export type GitHubWake =
  { wake: false; reason: string } | { wake: true; message: string; sessionKey: string; issueNumber: number | null };

/** Whether the event wakes the agent, and with what message in which session. */
export function githubWake(
  event: string,
  payload: GitHubPayload,
  repository: string,
  deliveryId: string,
  canComment: boolean,
): GitHubWake {
  if (!(event in wakingActions)) return { wake: false, reason: `${event} events do not wake the agent` };
  const actions = wakingActions[event];
  if (actions && !actions.includes(payload.action ?? '')) {
    return { wake: false, reason: `the ${payload.action ?? '(none)'} action of ${event} does not wake the agent` };
  }
  const sessionBase = `github:${repository.replace('/', ':')}`;
  if (event === 'push') {
    const commits = (payload.commits ?? [])
      .map(
        (commit) => `- ${commit.id.slice(0, 7)} ${commit.message.split('\n')[0]} (${commit.author?.name ?? 'unknown'})`,
      )
      .join('\n');
    const message = [
      `GitHub event: push to ${payload.ref ?? 'a branch'} of ${repository} by ${payload.sender?.login ?? 'someone'}.`,
      payload.compare ? `Compare: ${payload.compare}` : '',
      `Commits:\n${commits || '(none)'}`,
    ]
      .filter(Boolean)
      .join('\n');
    return {
      wake: true,
      message: cut(message, maxMessageChars),
      sessionKey: webhookSessionKey(`${sessionBase}:push:${deliveryId}`),
      issueNumber: null,
    };
  }
  const subject = event === 'pull_request' ? payload.pull_request : payload.issue;
  if (!subject)
    return { wake: false, reason: `the ${event} event has no ${event === 'pull_request' ? 'pull_request' : 'issue'}` };
  if (event === 'issue_comment' && payload.comment?.body?.includes(commentMarkerPrefix)) {
    return { wake: false, reason: "the comment is the agent's own" };
  }
  const kind = event === 'pull_request' || subject.pull_request !== undefined ? 'Pull request' : 'Issue';
  const lines = [
    `GitHub event: ${event} (${payload.action}) in ${repository} by ${payload.sender?.login ?? 'someone'}.`,
    `${kind} #${subject.number}: ${subject.title}`,
    `URL: ${subject.html_url}`,
    `Author: ${subject.user?.login ?? 'unknown'}`,
  ];
  if (event === 'pull_request' && payload.pull_request?.head && payload.pull_request.base) {
    lines.push(`Branches: ${payload.pull_request.head.ref} into ${payload.pull_request.base.ref}`);
  }
  if (event === 'issue_comment' && payload.comment) {
    lines.push('', `New comment by ${payload.comment.user?.login ?? 'someone'} (${payload.comment.html_url}):`);
    lines.push(cut(payload.comment.body ?? '', maxBodyChars));
  } else {
    lines.push('', cut(subject.body ?? '(no description)', maxBodyChars));
  }
  lines.push(
    '',
    canComment
      ? `You may answer on GitHub with the github_comment tool (repository "${repository}", issue_number ${subject.number}).`
      : 'You cannot comment on GitHub here (no token is connected): answer in text.',
  );
  return {
    wake: true,
    message: cut(lines.join('\n'), maxMessageChars),
    sessionKey: webhookSessionKey(`${sessionBase}:${subject.number}`),
    issueNumber: subject.number,
  };
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 20)}\n[… cut at ${max} characters]`;
}
