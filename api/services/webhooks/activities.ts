/**
 * The activities of a webhook run (workflows/webhook-run.workflow.ts) that run on the agent service's own task
 * queue, in its process (served beside the scheduled runs' by api/server.ts): preparing the owner's turn through the
 * one preparation of unattended runs (api/services/agent-runs/prepare.ts), recording the run's row, and the signed
 * callback of an automation run.
 *
 * By source:
 * - standard, automation: a turn of the named agent in the run's session; a standard webhook's answer also goes to
 *   the owner's linked chats when it forwards.
 * - github: the same, with `github_comment` offered for the repository when the owner gave a token (needing approval
 *   unless they allowed comments without).
 * - slack: the Slack channel is a messaging app chat (`slack:<channel id>`, owned by the chat until linked):
 *   `/link CODE` links it to an account as LINE and Telegram chats are linked (api/services/chat/linking.ts); a
 *   chat not linked to an account is told how to link; a linked one's message is routed to an agent (as the web
 *   chat's are) and answered in the event's thread, billed to and limited as the owner.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ConversationStore } from '../../../activities/conversations/conversation-store.ts';
import { CallbackSecrets } from '../../../activities/media/callbacks.ts';
import type { MessengerTarget } from '../../../common/messengers.ts';
import { postSignedWebhook } from '../../../activities/net/standard-webhooks.ts';
import { UrlRefusedError } from '../../../activities/net/url-guard.ts';
import { textProblem } from '../../../common/text.ts';
import type { PreparedWebhookRun, WebhookRunRecord } from '../../../common/webhooks.ts';
import type { Pool } from '../../../db/pool.ts';
import type { WebhookActivities } from '../../../workflows/webhook-run.workflow.ts';
import type { RateLimits } from '../../rate-limit.ts';
import type { AgentRuns } from '../agent-runs/prepare.ts';
import type { AgentMessage } from '../agents/agent-chat.ts';
import type { Principal } from '../apikeys/service.ts';
import { parseLinkCommand, type Linking } from '../chat/linking.ts';
import type { WebhookRunRow, WebhookRuns } from './runs.ts';

export interface WebhookActivityDependencies {
  pool: Pool;
  runs: WebhookRuns;
  agentRuns: AgentRuns;
  conversations: ConversationStore;
  linking: Linking;
  limits: RateLimits | undefined;
  principalForUser(userId: string): Promise<Principal | null>;
  /** Hosts a callback may reach although not public (FETCH_ALLOWED_HOSTS), as for media callbacks. */
  fetchAllowedHosts: string[];
}

const channelOf = { standard: 'webhook', github: 'github', automation: 'automation', slack: 'slack' } as const;

export function createWebhookActivities(dependencies: WebhookActivityDependencies): WebhookActivities {
  const { pool, runs, agentRuns } = dependencies;
  const secrets = new CallbackSecrets(pool);

  /** A run that ends without a turn: `text` is the reply (to the Slack thread, when there is one). */
  const reply = async (
    row: WebhookRunRow,
    text: string,
    outcome: { failed: boolean; error?: string },
  ): Promise<PreparedWebhookRun> => {
    const slack = row.options.slack;
    const replyTo: MessengerTarget[] = slack ? [{ platform: 'slack', to: slack.channel, thread: slack.thread }] : [];
    await agentRuns.recordSends('webhook', row.id, replyTo);
    return { kind: 'reply', text, replyTo, ...outcome };
  };

  const prepareSlack = async (row: WebhookRunRow): Promise<PreparedWebhookRun> => {
    const { conversations, linking, limits } = dependencies;
    const slack = row.options.slack!;
    const key = `slack:${slack.channel}`;
    const session = await conversations.openSession(key, key, 'slack');
    const text = row.message.trim();
    if (text === '')
      return reply(row, 'Mention me with a question, or send "/link CODE" to link this chat.', { failed: false });
    const problem = textProblem(text);
    if (problem) return reply(row, `I cannot read that message: it ${problem}.`, { failed: false });
    const command = parseLinkCommand(text, true);
    if (command) return reply(row, await linking.run({ ...session, owner: key }, command), { failed: false });
    const owner = (await conversations.conversationOwner(session.conversationId)) ?? key;
    if (!owner.startsWith('user:')) {
      return reply(
        row,
        'This Slack conversation is not linked to an account yet. Type /link in the Tessera web app (or GET /link/code) ' +
          'and send me "/link CODE" here (mention me in a channel; in a direct message start with a space, since Slack ' +
          'takes a leading "/" for its own commands).',
        { failed: false },
      );
    }
    const userId = owner.slice('user:'.length);
    await pool.query('update webhook_runs set user_id = $2 where id = $1', [row.id, userId]);
    const principal = await dependencies.principalForUser(userId);
    const subject = principal ? limits?.subjectFor(principal) : null;
    if (limits && subject) {
      const outcome = await limits.consume(subject);
      if (!outcome.allowed) {
        const minutes = Math.ceil((outcome.retryAfterSeconds ?? 60) / 60);
        const message = `the message limit (${subject.scope}) is reached; try again in ${minutes} minutes`;
        return reply(row, `Sorry, I cannot answer that now: ${message}`, {
          failed: true,
          error: `rate_limit_exceeded: ${message}`,
        });
      }
    }
    return turn(row, userId, { sessionKey: key, channel: 'slack', message: text, session }, false, [
      { platform: 'slack', to: slack.channel, thread: slack.thread },
    ]);
  };

  /** The owner's turn; a refusal (no credits, agent gone) ends the run without one. */
  const turn = async (
    row: WebhookRunRow,
    userId: string,
    message: AgentMessage,
    toLinkedChats: boolean,
    deliverTo: MessengerTarget[] = [],
  ): Promise<PreparedWebhookRun> => {
    const prepared = await agentRuns.prepare({ userId, message, origin: 'webhook', toLinkedChats, deliverTo });
    if (prepared.kind === 'refused') {
      const error = `${prepared.errorType}: ${prepared.message}`;
      return row.source === 'slack'
        ? reply(row, `Sorry, I cannot answer that now: ${prepared.message}`, { failed: true, error })
        : reply(row, '', { failed: true, error });
    }
    const routed = prepared.turn.agent?.id ?? null;
    if (routed && routed !== row.agent_id) {
      await pool.query('update webhook_runs set agent_id = $2 where id = $1', [row.id, routed]);
    }
    return { ...prepared, replyOnFailure: row.source === 'slack' };
  };

  return {
    async prepareWebhookRun({ runId }) {
      const row = await runs.row(runId);
      if (!row) throw ApplicationFailure.nonRetryable(`No webhook run ${runId}`, 'not_found');
      if (row.source === 'slack') return prepareSlack(row);
      const base: AgentMessage = {
        sessionKey: row.session_key,
        channel: channelOf[row.source],
        message: row.message,
        agentId: row.agent_id!,
      };
      const github = row.options.github;
      const message: AgentMessage = github?.canComment
        ? { ...base, extraTools: [{ name: 'github_comment', needsApproval: !github.commentWithoutApproval }] }
        : base;
      return turn(row, row.user_id!, message, row.options.forwardToMessengers === true);
    },

    async recordWebhookRun(record: WebhookRunRecord) {
      const ended = record.status !== 'running';
      // A run whose message its turn routed (a Slack message names no agent) takes the agent the turn chose.
      const { rows } = await pool.query<{ callback_wanted: boolean; callback_url: string | null }>(
        `update webhook_runs set status = $2, turn_id = coalesce($3, turn_id), answer = coalesce($4, answer),
           error = coalesce($5, error), finished_at = case when $6 then coalesce(finished_at, now()) else null end,
           agent_id = coalesce(agent_id, (select t.agent_id from chat_turns t where t.id = coalesce($3, webhook_runs.turn_id)))
         where id = $1 returning callback_wanted, callback_url`,
        [record.runId, record.status, record.turnId ?? null, record.answer ?? null, record.error ?? null, ended],
      );
      const row = rows[0];
      return { callback: ended && !!row?.callback_wanted && !!row.callback_url };
    },

    /**
     * POSTs the ended run to its callback URL, signed with the owner's callback secret (the one media job callbacks
     * use: `GET /api/v1/media/callback-secret`), as activities/media/callbacks.ts delivers a job's: the same headers,
     * guard and rules, `webhook-id: msg_<run id>`; sent once (a delivered row is not sent again).
     */
    async deliverWebhookRunCallback(runId) {
      const row = await runs.row(runId);
      if (!row?.callback_url || !row.user_id) return 'no callback';
      if (row.callback_status === 'delivered') return 'already delivered';
      const run = await runs.viewOf(row);
      const body = JSON.stringify({ event: `webhook.run.${row.status === 'done' ? 'completed' : 'failed'}`, run });
      const { secret, previousSecret } = await secrets.current(row.user_id);
      await pool.query(
        `update webhook_runs set callback_attempts = callback_attempts + 1, callback_status = 'pending' where id = $1`,
        [runId],
      );
      let status: number;
      try {
        status = await postSignedWebhook({
          url: row.callback_url,
          id: `msg_${row.id}`,
          body,
          secrets: [secret, ...(previousSecret ? [previousSecret] : [])],
          allowedHosts: dependencies.fetchAllowedHosts,
        });
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        await pool.query('update webhook_runs set callback_error = $2 where id = $1', [runId, message]);
        if (error instanceof UrlRefusedError) throw ApplicationFailure.nonRetryable(message, 'CallbackRefused');
        throw error;
      }
      if (status < 200 || status > 299) {
        const message = `the receiver answered ${status}`;
        await pool.query('update webhook_runs set callback_error = $2 where id = $1', [runId, message]);
        throw ApplicationFailure.retryable(message, 'CallbackRejected');
      }
      await pool.query(`update webhook_runs set callback_status = 'delivered', callback_error = null where id = $1`, [
        runId,
      ]);
      return 'delivered';
    },

    async webhookRunCallbackGaveUp(runId, error) {
      await pool.query(
        `update webhook_runs set callback_status = 'failed', callback_error = coalesce($2, callback_error)
         where id = $1 and callback_status is distinct from 'delivered'`,
        [runId, error],
      );
    },
  };
}
