import { defineEntity, p } from '@mikro-orm/core';

/**
 * Teams (spec 4.10; docs/teams-and-a2a.md): a named group of users. Members are `owner` or `member`; only
 * owners invite (by e-mail, `TeamInvitation`), every member may broadcast (`TeamBroadcast`, delivered by the
 * `teamBroadcast` workflow, one `TeamBroadcastDelivery` per member). Reads and writes go through
 * api/services/teams/ and activities/teams/ (plain SQL).
 */
export const Team = defineEntity({
  name: 'Team',
  tableName: 'teams',
  properties: {
    /** `team_…` */
    id: p.string().primary(),
    name: p.string(),
    /** The user who created it (its first owner). */
    createdBy: p.string(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});

/** A user's membership of a team; `role` is `owner` or `member`. */
export const TeamMember = defineEntity({
  name: 'TeamMember',
  tableName: 'team_members',
  properties: {
    teamId: p.string().primary(),
    userId: p.string().primary().index(),
    role: p.string(),
    joinedAt: p.datetime().onCreate(() => new Date()),
  },
});

/**
 * An invitation mailed to an address: its link carries a token of which only the SHA-256 is kept. Used once
 * (`accepted_at`), within 7 days; a new invitation to the same address retires the older pending ones.
 */
export const TeamInvitation = defineEntity({
  name: 'TeamInvitation',
  tableName: 'team_invitations',
  properties: {
    /** `tinv_…` */
    id: p.string().primary(),
    teamId: p.string().index(),
    /** Lower-cased and trimmed. */
    email: p.string(),
    /** The role the invitee gets: `owner` or `member`. */
    role: p.string(),
    /** sha256 (hex) of the token in the link. */
    tokenHash: p.string().unique(),
    invitedBy: p.string(),
    createdAt: p.datetime().onCreate(() => new Date()),
    expiresAt: p.datetime(),
    acceptedAt: p.datetime().nullable(),
    /** The account that joined by it. */
    acceptedBy: p.string().nullable(),
  },
});

/**
 * A message to every member of a team, sent by a member; delivered by the workflow `broadcast-<id>`. `status`:
 * `running`, then `delivered` (every member reached), `partial` or `failed`.
 */
export const TeamBroadcast = defineEntity({
  name: 'TeamBroadcast',
  tableName: 'team_broadcasts',
  properties: {
    /** `bc_…` */
    id: p.string().primary(),
    teamId: p.string().index(),
    senderId: p.string(),
    message: p.text(),
    status: p.string(),
    createdAt: p.datetime().onCreate(() => new Date()),
    finishedAt: p.datetime().nullable(),
  },
});

/**
 * One member's delivery of a broadcast: `pending`, `delivered` or `failed`. `sessionDeliveredAt` is set when the
 * message is in the member's `team:<team id>` session; `channels` records each linked messaging app chat
 * (`{platform, to, parts, sent, delivered_at?, error?}`), so a retried delivery skips what already went out.
 */
export const TeamBroadcastDelivery = defineEntity({
  name: 'TeamBroadcastDelivery',
  tableName: 'team_broadcast_deliveries',
  properties: {
    broadcastId: p.string().primary(),
    userId: p.string().primary(),
    status: p.string(),
    sessionDeliveredAt: p.datetime().nullable(),
    channels: p.json<unknown[]>(),
    deliveredAt: p.datetime().nullable(),
    error: p.text().nullable(),
  },
});
