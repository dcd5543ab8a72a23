/**
 * GitHub's REST API as the github_comment tool uses it (activities/tools/github-comment.ts), through the official
 * `@octokit/request` with the base URL GITHUB_API_BASE_URL (the simulator's under `npm start` and in tests): a
 * comment on an issue or pull request (pull requests are issues to the comments API), with the repository owner's
 * token (webhook-store.ts).
 *
 * Sent once: GitHub's API takes no idempotency key, so each comment carries an invisible marker naming the tool call
 * (`<!-- tessera-call:<call key> -->`, an HTML comment GitHub does not render), and an attempt first looks for it
 * among the repository's latest comments: a retry after a crash between GitHub's accepting the comment and the
 * call's result being recorded finds the comment and posts nothing. The marker also tells the GitHub webhook that
 * an `issue_comment` event is the agent's own comment coming back, which must not wake it again.
 */
import { request } from '@octokit/request';

export const commentMarkerPrefix = '<!-- tessera-call:';

export function commentMarker(callKey: string): string {
  return `${commentMarkerPrefix}${callKey} -->`;
}

/** A refusal by GitHub that retrying cannot change (no access, no such issue, a bad token). */
export class GitHubRejection extends Error {
  override readonly name = 'GitHubRejection';
}

export class GitHubIssues {
  private readonly request: typeof request;

  constructor(baseUrl: string) {
    this.request = request.defaults({
      baseUrl: baseUrl.replace(/\/$/, ''),
      headers: { 'user-agent': 'Tessera-Agents/1', 'x-github-api-version': '2022-11-28' },
    });
  }

  /** Comments `body` on the issue (or pull request), once per `callKey`: the comment's URL. */
  async comment(options: {
    token: string;
    repository: string;
    issueNumber: number;
    body: string;
    callKey: string;
  }): Promise<{ url: string; alreadyPosted: boolean }> {
    const [owner, repo] = options.repository.split('/') as [string, string];
    const marker = commentMarker(options.callKey);
    const headers = { authorization: `Bearer ${options.token}` };
    try {
      const recent = await this.request('GET /repos/{owner}/{repo}/issues/comments', {
        owner,
        repo,
        sort: 'created',
        direction: 'desc',
        per_page: 100,
        headers,
        request: { signal: AbortSignal.timeout(15_000) },
      });
      const earlier = recent.data.find((comment) => comment.body?.includes(marker));
      if (earlier) return { url: earlier.html_url, alreadyPosted: true };
      const created = await this.request('POST /repos/{owner}/{repo}/issues/{issue_number}/comments', {
        owner,
        repo,
        issue_number: options.issueNumber,
        body: `${options.body}\n\n${marker}`,
        headers,
        request: { signal: AbortSignal.timeout(15_000) },
      });
      return { url: created.data.html_url, alreadyPosted: false };
    } catch (error) {
      const status = (error as { status?: number }).status;
      if (status !== undefined && status >= 400 && status < 500 && status !== 429) {
        throw new GitHubRejection(`GitHub answered ${status}: ${(error as Error).message}`);
      }
      throw error;
    }
  }
}

/**
 * The github_comment tool's service (ToolServices.github): the owner's token for the repository they connected, then
 * the comment. No connected repository with a token: a rejection the agent reads.
 */
export function githubCommentService(
  tokens: { githubToken(userId: string, repository: string): Promise<string | null> },
  baseUrl: string,
) {
  const issues = new GitHubIssues(baseUrl);
  return {
    async comment(
      userId: string,
      comment: { repository: string; issueNumber: number; body: string },
      callKey: string,
    ): Promise<{ url: string; alreadyPosted: boolean }> {
      const token = await tokens.githubToken(userId, comment.repository);
      if (!token) {
        throw new GitHubRejection(
          `${comment.repository} is not connected to this account with a GitHub token (POST /webhooks with source github)`,
        );
      }
      return issues.comment({ token, ...comment, callKey });
    },
  };
}
