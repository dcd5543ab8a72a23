/**
 * Channel linking (spec 4.9): web, LINE and Telegram sessions sharing one conversation. Three ways, all ending in
 * `ConversationStore.linkConversations`:
 *
 * 1. Deep link: `GET /api/v1/sessions/{id}/link` gives links that open each app with the session in them.
 *    Telegram's `https://t.me/<bot>?start=<payload>` arrives as `/start <payload>`; LINE has no start parameter,
 *    so its link (`oaMessage`) opens the bot's chat with the session id typed in, for the user to send (way 2).
 *    The payload is the session id (base64url) when it may be linked by id, else a link code (`c<6 digits>`).
 * 2. Session id: a message to a bot that is a linkable session id (one carrying a UUID, see
 *    `ConversationStore.linkableSession`) links the chat to that session.
 * 3. Code: `/link` in any channel answers a 6-digit code valid 10 minutes; `/link CODE` in another channel links
 *    the two. Codes are single-use, and each chat or account may try `linkAttemptLimits` codes (right or wrong)
 *    per hour and per day, which puts guessing one of a million codes in its 10 minutes out of reach.
 *
 * The session that types the code (or names the session) joins the other's conversation.
 */
import type { ConversationStore, SessionRef } from '../../../activities/conversations/conversation-store.ts';
import { linkableKeyPattern, linkCodeLifetimeMs } from '../../../activities/conversations/conversation-store.ts';
import type { MessengerClient } from '../../../activities/messengers/messenger.ts';
import type { MessengerPlatform } from '../../../common/messengers.ts';
import { mergeSandbox } from '../../../activities/tools/sandbox.ts';
import type { ToolSettings } from '../../../config/tool-settings.ts';
import type { RateLimits, Subject } from '../../rate-limit.ts';

/** Link codes a chat or account may try. */
export const linkAttemptLimits = { per_hour: 10, per_day: 30 };

export type LinkCommand = { kind: 'issue' } | { kind: 'redeem'; code: string } | { kind: 'session'; key: string };

type Session = SessionRef & { owner: string };

/** What a link attempt came to; `target` is the session joined (when linked or already linked). */
export interface LinkOutcome {
  status: 'linked' | 'already' | 'busy' | 'foreign' | 'unknown' | 'invalid' | 'same' | 'limited';
  message: string;
  target?: Session;
}

/**
 * The linking command a message is, if any: `/link`, `/link 123456`, Telegram's `/start <payload>`, or (from a
 * messaging app) a bare linkable session id.
 */
export function parseLinkCommand(text: string, fromMessenger: boolean): LinkCommand | null {
  const trimmed = text.trim();
  const link = /^\/link(?:@\w+)?(?:\s+(\S+))?$/i.exec(trimmed);
  if (link) {
    if (!link[1]) return { kind: 'issue' };
    return { kind: 'redeem', code: link[1] };
  }
  const start = /^\/start(?:@\w+)?\s+(\S+)$/.exec(trimmed);
  if (start && fromMessenger) {
    const payload = start[1]!;
    if (/^c\d{6}$/.test(payload)) return { kind: 'redeem', code: payload.slice(1) };
    const key = Buffer.from(payload, 'base64url').toString('utf8');
    return { kind: 'session', key };
  }
  if (fromMessenger && linkableKeyPattern.test(trimmed) && /^\S+$/.test(trimmed))
    return { kind: 'session', key: trimmed };
  return null;
}

export class Linking {
  private readonly dependencies: {
    conversations: ConversationStore;
    limits: RateLimits | undefined;
    toolSettings: ToolSettings;
    messengers: Partial<Record<MessengerPlatform, MessengerClient>>;
  };

  constructor(dependencies: Linking['dependencies']) {
    this.dependencies = dependencies;
  }

  /** Carries out a linking command for `session` and answers what to tell its user. */
  async run(session: Session, command: LinkCommand): Promise<string> {
    const { conversations } = this.dependencies;
    if (command.kind === 'issue') {
      const { code } = await conversations.createLinkCode(session.sessionId);
      const minutes = linkCodeLifetimeMs / 60_000;
      return `Your link code is ${code}. Type "/link ${code}" in the other chat (web, LINE or Telegram) within ${minutes} minutes to share this conversation there.`;
    }
    return (await this.join(session, command)).message;
  }

  /**
   * Joins `session` to the session a code or linkable id names (ways 2 and 3), counted against the owner's
   * attempts: the outcome, and what to tell the user. The agent service's `POST /link/verify` answers by `status`.
   */
  async join(session: Session, command: Exclude<LinkCommand, { kind: 'issue' }>): Promise<LinkOutcome> {
    const { conversations } = this.dependencies;
    const refusal = await this.attempt(session);
    if (refusal) return { status: 'limited', message: refusal };
    let target: Session | null;
    if (command.kind === 'redeem') {
      if (!/^\d{6}$/.test(command.code))
        return { status: 'invalid', message: 'A link code has 6 digits: type "/link 123456".' };
      target = await conversations.redeemLinkCode(command.code);
      if (!target) {
        return {
          status: 'unknown',
          message: 'That link code is unknown or has expired. Type /link in the other chat for a new one.',
        };
      }
    } else {
      target = await conversations.linkableSession(command.key);
      if (!target) {
        return {
          status: 'unknown',
          message: 'No session can be linked by that id. Type /link in the other chat and send "/link CODE" here.',
        };
      }
    }
    if (target.sessionId === session.sessionId) {
      return { status: 'same', message: 'That code was made in this chat: use it in another one.' };
    }
    const linked = await conversations.linkConversations(session.conversationId, target.conversationId);
    switch (linked.status) {
      case 'already':
        return { status: 'already', message: 'These chats are already linked.', target };
      case 'busy':
        return { status: 'busy', message: 'A message is still being answered; try linking again in a moment.' };
      case 'foreign':
        return {
          status: 'foreign',
          message: 'These chats belong to two different accounts and cannot be linked.',
        };
      case 'linked':
        await mergeSandbox(
          this.dependencies.toolSettings,
          session.conversationId,
          target.conversationId,
          session.channel,
        );
        return {
          status: 'linked',
          message: `Linked: this chat now shares one conversation with ${target.channel} (${target.key}).`,
          target,
        };
    }
  }

  /**
   * Links that open each configured messaging app ready to link to `session` (way 1), with the code they carry
   * (or null when the id itself is carried).
   */
  async deepLinks(
    session: Session,
  ): Promise<{ code: string | null; expires_at: string | null; links: Record<string, string> }> {
    const byId = linkableKeyPattern.test(session.key) && Buffer.byteLength(session.key) <= 48;
    const issued = byId ? null : await this.dependencies.conversations.createLinkCode(session.sessionId);
    const links: Record<string, string> = {};
    for (const [platform, client] of Object.entries(this.dependencies.messengers)) {
      const payload =
        platform === 'telegram'
          ? issued
            ? `c${issued.code}`
            : Buffer.from(session.key).toString('base64url')
          : issued
            ? `/link ${issued.code}`
            : session.key;
      const link = await client.deepLink(payload);
      if (link) links[platform] = link;
    }
    return { code: issued?.code ?? null, expires_at: issued?.expiresAt.toISOString() ?? null, links };
  }

  /** Counts a link attempt against the session owner's allowance; the refusal text when it is spent. */
  private async attempt(session: Session): Promise<string | null> {
    const limits = this.dependencies.limits;
    if (!limits) return null;
    const subject: Subject = { key: `link:${session.owner}`, limits: linkAttemptLimits, scope: 'link code attempts' };
    const outcome = await limits.consume(subject);
    if (outcome.allowed) return null;
    const minutes = Math.ceil((outcome.retryAfterSeconds ?? 3600) / 60);
    return `Too many link attempts from this chat; try again in ${minutes} minutes.`;
  }
}
