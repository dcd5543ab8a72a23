/**
 * `github_comment`: comments on an issue or pull request of a repository the user connected with a GitHub webhook
 * (docs/webhooks.md, "How to connect GitHub"), with the token they gave for it. Offered only in the runs a GitHub
 * delivery starts (api/services/webhooks/activities.ts adds it to the agent's tools for that turn), never otherwise. An
 * effect outside the conversation, so it needs the owner's approval unless they allowed comments without one on
 * that repository's webhook (the run then waits: `GET /webhook/runs/{id}` shows the approval, and
 * `POST /chat/approvals/{id}/approve` decides it). Posted once per tool call (activities/webhooks/github.ts).
 */
import { z } from 'zod';
import { defineTool, ToolError } from './tool.ts';
import { repositoryPattern } from '../webhooks/webhook-store.ts';
import { GitHubRejection } from '../webhooks/github.ts';

export const githubCommentTool = defineTool({
  name: 'github_comment',
  description:
    'Post a comment on a GitHub issue or pull request of the repository this event came from (Markdown). The comment ' +
    'is public to everyone who can see the repository.',
  input: z
    .object({
      repository: z.string().regex(repositoryPattern, 'owner/name'),
      issue_number: z.number().int().positive(),
      body: z.string().trim().min(1).max(60_000),
    })
    .strict(),
  timeoutMs: 45_000,
  retry: { maximumAttempts: 3, initialIntervalMs: 2_000 },
  maxOutputChars: 500,
  needsApproval: true,
  agentsOnly: true,
  configured: () => true,
  async run({ repository, issue_number: issueNumber, body }, context) {
    const github = context.services?.github;
    if (!github) throw new ToolError('GitHub comments are not available here (TOKEN_ENCRYPTION_KEY is not set)');
    if (!context.userId) throw new ToolError('GitHub comments need an account');
    if (!context.callKey) throw new ToolError('this call has no idempotency key');
    try {
      const posted = await github.comment(context.userId, { repository, issueNumber, body }, context.callKey);
      return `Commented on ${repository}#${issueNumber}: ${posted.url}`;
    } catch (error) {
      if (error instanceof GitHubRejection) throw new ToolError(error.message);
      throw new ToolError(`GitHub could not be reached: ${(error as Error).message}`, {
        retryable: true,
        cause: error,
      });
    }
  },
});
