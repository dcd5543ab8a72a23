/**
 * Teams (spec 4.10; docs/teams-and-a2a.md): creating and listing teams, invitations by e-mail, and
 * broadcasts. Plain SQL on the `pg` pool; the routes (api/agents/routes/teams/) check who may do what with
 * `role()`: a team is visible to its members only, owners invite, members broadcast.
 *
 * Invitations: a token of 32 random bytes is mailed as `<base>/teams/invitations/accept?token=…`; only its SHA-256
 * is stored. It works once (`accepted_at`, set by a conditional update, so two racing uses cannot both win), within
 * `invitationLifetimeMs`; a newer invitation to the same address retires the older pending ones. Accepting adds the
 * membership (an `owner` invitation promotes a member; nothing ever demotes).
 *
 * Broadcasts: the broadcast and one pending delivery per member (the members at that moment) are recorded in one
 * transaction, then the `teamBroadcast` workflow (`broadcast-<id>`) delivers them (workflows/team-broadcast.workflow.ts).
 * Its status is the workflow's query while it runs and the table once it has finished.
 */
import type { Client } from '@temporalio/client';
import { WorkflowIdConflictPolicy } from '@temporalio/common';
import { createHash, randomBytes } from 'node:crypto';
import type { Mailer } from '../../../activities/mail/mailer.ts';
import type { ChannelDelivery, DeliveryStatus } from '../../../activities/teams/team-broadcasts.ts';
import { normalizeEmail } from '../../../common/email.ts';
import { kindKey, userKey } from '../../../common/search-attributes.ts';
import type { Pool } from '../../../db/pool.ts';
import {
  teamBroadcastStatusQuery,
  type TeamBroadcastInput,
  type TeamBroadcastState,
  type teamBroadcast,
} from '../../../workflows/team-broadcast.workflow.ts';
import { ApiError } from '../../errors.ts';

export type TeamRole = 'owner' | 'member';

export const invitationLifetimeMs = 7 * 24 * 3_600_000;

export const teamBroadcastWorkflowId = (broadcastId: string) => `broadcast-${broadcastId}`;

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('base64url')}`;
const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

export interface TeamView {
  id: string;
  name: string;
  role: TeamRole;
  member_count: number;
  created_by: string;
  created_at: string;
}

export interface PendingInvitation {
  id: string;
  teamId: string;
  teamName: string;
  email: string;
  role: TeamRole;
}

export interface BroadcastView {
  id: string;
  team_id: string;
  sender_id: string;
  message: string;
  status: string;
  /** Where the states come from: the running workflow's query, or the table once it has finished. */
  source: 'workflow' | 'table';
  created_at: string;
  finished_at: string | null;
  deliveries: Array<{
    user_id: string;
    email: string | null;
    status: DeliveryStatus;
    session: 'delivered' | 'pending';
    channels: Array<{ platform: string; status: 'delivered' | 'failed' | 'pending'; error?: string }>;
    delivered_at: string | null;
    error: string | null;
  }>;
}

export class TeamService {
  private readonly dependencies: {
    pool: Pool;
    client: Client;
    taskQueue: string;
    mailer: Mailer;
    productName: string;
  };

  constructor(dependencies: TeamService['dependencies']) {
    this.dependencies = dependencies;
  }

  async create(userId: string, name: string): Promise<TeamView> {
    const id = newId('team');
    const client = await this.dependencies.pool.connect();
    try {
      await client.query('begin');
      const { rows } = await client.query<{ created_at: Date }>(
        `insert into teams (id, name, created_by, created_at) values ($1, $2, $3, now()) returning created_at`,
        [id, name, userId],
      );
      await client.query(
        `insert into team_members (team_id, user_id, role, joined_at) values ($1, $2, 'owner', now())`,
        [id, userId],
      );
      await client.query('commit');
      return {
        id,
        name,
        role: 'owner',
        member_count: 1,
        created_by: userId,
        created_at: rows[0]!.created_at.toISOString(),
      };
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** The teams the user belongs to, newest first. */
  async list(userId: string): Promise<TeamView[]> {
    const { rows } = await this.dependencies.pool.query<{
      id: string;
      name: string;
      role: TeamRole;
      member_count: number;
      created_by: string;
      created_at: Date;
    }>(
      `select t.id, t.name, m.role, t.created_by, t.created_at,
              (select count(*)::int from team_members o where o.team_id = t.id) as member_count
       from team_members m join teams t on t.id = m.team_id
       where m.user_id = $1 order by t.created_at desc, t.id`,
      [userId],
    );
    return rows.map((row) => ({ ...row, created_at: row.created_at.toISOString() }));
  }

  /** The user's role in the team, or null when they are not a member (or there is no such team). */
  async role(userId: string, teamId: string): Promise<TeamRole | null> {
    const { rows } = await this.dependencies.pool.query<{ role: TeamRole }>(
      'select role from team_members where team_id = $1 and user_id = $2',
      [teamId, userId],
    );
    return rows[0]?.role ?? null;
  }

  /** One team with its members (for a member). */
  async details(userId: string, teamId: string) {
    const team = (await this.list(userId)).find((candidate) => candidate.id === teamId);
    if (!team) return null;
    const { rows } = await this.dependencies.pool.query<{
      user_id: string;
      email: string | null;
      role: TeamRole;
      joined_at: Date;
    }>(
      `select m.user_id, u.email, m.role, m.joined_at from team_members m left join users u on u.id = m.user_id
       where m.team_id = $1 order by m.joined_at, m.user_id`,
      [teamId],
    );
    return { ...team, members: rows.map((row) => ({ ...row, joined_at: row.joined_at.toISOString() })) };
  }

  /**
   * Mails an invitation to `email` with a link built on `baseUrl`. 409 when an account with that address is a
   * member already. A mail that cannot be sent leaves no invitation behind (503).
   */
  async invite(
    inviter: { userId: string; teamId: string },
    invitee: { email: string; role: TeamRole },
    baseUrl: string,
  ): Promise<{ id: string; email: string; role: TeamRole; expires_at: string }> {
    const { pool, mailer, productName } = this.dependencies;
    const email = normalizeEmail(invitee.email);
    // Stored addresses are normalised (common/email.ts): a plain comparison, on the users' unique index.
    const member = await pool.query(
      `select 1 from team_members m join users u on u.id = m.user_id where m.team_id = $1 and u.email = $2`,
      [inviter.teamId, email],
    );
    if (member.rowCount) throw new ApiError('conflict', `${email} is a member of this team already`);
    const { rows } = await pool.query<{ name: string; inviter: string | null }>(
      'select t.name, u.email as inviter from teams t left join users u on u.id = $2 where t.id = $1',
      [inviter.teamId, inviter.userId],
    );
    const team = rows[0];
    if (!team) throw new ApiError('not_found', `No team '${inviter.teamId}'`);

    const id = newId('tinv');
    const token = randomBytes(32).toString('base64url');
    const tokenHash = hashToken(token);
    const expiresAt = new Date(Date.now() + invitationLifetimeMs);
    await pool.query(
      `update team_invitations set expires_at = now()
       where team_id = $1 and email = $2 and accepted_at is null and expires_at > now()`,
      [inviter.teamId, email],
    );
    await pool.query(
      `insert into team_invitations (id, team_id, email, role, token_hash, invited_by, created_at, expires_at,
                                     accepted_at, accepted_by)
       values ($1, $2, $3, $4, $5, $6, now(), $7, null, null)`,
      [id, inviter.teamId, email, invitee.role, tokenHash, inviter.userId, expiresAt],
    );
    const link = new URL('/teams/invitations/accept', baseUrl);
    link.searchParams.set('token', token);
    const days = invitationLifetimeMs / (24 * 3_600_000);
    try {
      await mailer.send({
        to: email,
        subject: `You are invited to a team on ${productName}: ${team.name}`,
        text: [
          'Hello,',
          '',
          `${team.inviter ?? 'A team owner'} invites you to join the team "${team.name}" on ${productName} as ${
            invitee.role === 'owner' ? 'an owner' : 'a member'
          }.`,
          '',
          'Open this link to accept:',
          '',
          link.href,
          '',
          `It works once, within ${days} days. Opening it logs you in to ${productName} with this address (an`,
          'account is made for it if there is none). If you do not want to join, ignore this mail.',
        ].join('\n'),
        idempotencyKey: `team-invitation:${tokenHash}`,
      });
    } catch (error) {
      await pool.query('delete from team_invitations where id = $1', [id]).catch(() => undefined);
      throw error;
    }
    return { id, email, role: invitee.role, expires_at: expiresAt.toISOString() };
  }

  /** The pending invitation a token names, or null when it is unknown, used or expired. */
  async invitation(token: string): Promise<PendingInvitation | null> {
    const { rows } = await this.dependencies.pool.query<{
      id: string;
      team_id: string;
      name: string;
      email: string;
      role: TeamRole;
    }>(
      `select i.id, i.team_id, t.name, i.email, i.role from team_invitations i join teams t on t.id = i.team_id
       where i.token_hash = $1 and i.accepted_at is null and i.expires_at > now()`,
      [hashToken(token)],
    );
    const row = rows[0];
    return row ? { id: row.id, teamId: row.team_id, teamName: row.name, email: row.email, role: row.role } : null;
  }

  /** Uses the invitation up for `userId` and adds the membership: the role held after, or null when it was used. */
  async accept(invitation: PendingInvitation, userId: string): Promise<TeamRole | null> {
    const client = await this.dependencies.pool.connect();
    try {
      await client.query('begin');
      const used = await client.query(
        `update team_invitations set accepted_at = now(), accepted_by = $2
         where id = $1 and accepted_at is null and expires_at > now()`,
        [invitation.id, userId],
      );
      if (used.rowCount === 0) {
        await client.query('rollback');
        return null;
      }
      const { rows } = await client.query<{ role: TeamRole }>(
        `insert into team_members (team_id, user_id, role, joined_at) values ($1, $2, $3, now())
         on conflict (team_id, user_id) do update set role = 'owner' where excluded.role = 'owner'
         returning role`,
        [invitation.teamId, userId, invitation.role],
      );
      await client.query('commit');
      return rows[0]?.role ?? (await this.role(userId, invitation.teamId));
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** Records a broadcast to every member and starts its workflow: 202's body. */
  async broadcast(senderId: string, teamId: string, message: string): Promise<{ id: string; status: string }> {
    const { pool, client: temporal, taskQueue } = this.dependencies;
    const id = newId('bc');
    const connection = await pool.connect();
    let recipients: string[];
    let teamName: string;
    try {
      await connection.query('begin');
      const team = await connection.query<{ name: string }>('select name from teams where id = $1', [teamId]);
      teamName = team.rows[0]?.name ?? teamId;
      await connection.query(
        `insert into team_broadcasts (id, team_id, sender_id, message, status, created_at, finished_at)
         values ($1, $2, $3, $4, 'running', now(), null)`,
        [id, teamId, senderId, message],
      );
      const { rows } = await connection.query<{ user_id: string }>(
        `insert into team_broadcast_deliveries (broadcast_id, user_id, status, session_delivered_at, channels,
                                                delivered_at, error)
         select $1, user_id, 'pending', null, '[]'::jsonb, null, null from team_members where team_id = $2
         returning user_id`,
        [id, teamId],
      );
      recipients = rows.map((row) => row.user_id).sort();
      await connection.query('commit');
    } catch (error) {
      await connection.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      connection.release();
    }
    const input: TeamBroadcastInput = { broadcastId: id, teamId, senderId, recipients };
    try {
      await temporal.workflow.start<typeof teamBroadcast>('teamBroadcast', {
        workflowId: teamBroadcastWorkflowId(id),
        taskQueue,
        args: [input],
        workflowIdConflictPolicy: WorkflowIdConflictPolicy.FAIL,
        typedSearchAttributes: [
          { key: kindKey, value: 'team-broadcast' },
          { key: userKey, value: senderId },
        ],
        staticSummary: `Broadcast from ${senderId} to the ${recipients.length} members of team "${teamName}" (${teamId})`,
      });
    } catch (error) {
      await pool.query(`update team_broadcasts set status = 'failed', finished_at = now() where id = $1`, [id]);
      await pool.query(
        `update team_broadcast_deliveries set status = 'failed', error = 'the broadcast could not be started'
         where broadcast_id = $1`,
        [id],
      );
      throw error;
    }
    return { id, status: 'running' };
  }

  /** A broadcast of the team with per-member delivery states, or null when the team has none with this id. */
  async broadcastStatus(teamId: string, broadcastId: string): Promise<BroadcastView | null> {
    const { pool, client } = this.dependencies;
    const { rows } = await pool.query<{
      id: string;
      team_id: string;
      sender_id: string;
      message: string;
      status: string;
      created_at: Date;
      finished_at: Date | null;
    }>('select * from team_broadcasts where id = $1 and team_id = $2', [broadcastId, teamId]);
    const broadcast = rows[0];
    if (!broadcast) return null;
    const deliveries = await pool.query<{
      user_id: string;
      email: string | null;
      status: DeliveryStatus;
      session_delivered_at: Date | null;
      channels: ChannelDelivery[];
      delivered_at: Date | null;
      error: string | null;
    }>(
      `select d.user_id, u.email, d.status, d.session_delivered_at, d.channels, d.delivered_at, d.error
       from team_broadcast_deliveries d left join users u on u.id = d.user_id
       where d.broadcast_id = $1 order by d.user_id`,
      [broadcastId],
    );
    let live: TeamBroadcastState | null = null;
    if (!broadcast.finished_at) {
      try {
        live = await client.workflow.getHandle(teamBroadcastWorkflowId(broadcastId)).query(teamBroadcastStatusQuery);
      } catch {
        // Finished between the two reads, or not reachable: the table says what is known.
        live = null;
      }
    }
    const liveStatus = new Map(live?.deliveries.map((delivery) => [delivery.user_id, delivery]) ?? []);
    return {
      id: broadcast.id,
      team_id: broadcast.team_id,
      sender_id: broadcast.sender_id,
      message: broadcast.message,
      status: live?.status ?? broadcast.status,
      source: live ? 'workflow' : 'table',
      created_at: broadcast.created_at.toISOString(),
      finished_at: broadcast.finished_at?.toISOString() ?? null,
      deliveries: deliveries.rows.map((row) => {
        // The table is written before the workflow hears of an outcome: a settled row is never behind the query.
        const fromWorkflow = liveStatus.get(row.user_id);
        const status = row.status !== 'pending' || !fromWorkflow ? row.status : fromWorkflow.status;
        return {
          user_id: row.user_id,
          email: row.email,
          status,
          session: row.session_delivered_at ? 'delivered' : 'pending',
          channels: row.channels.map((channel) => ({
            platform: channel.platform,
            status: channel.delivered_at ? 'delivered' : channel.error ? 'failed' : 'pending',
            ...(channel.error ? { error: channel.error } : {}),
          })),
          delivered_at: row.delivered_at?.toISOString() ?? null,
          error: row.error ?? fromWorkflow?.error ?? null,
        };
      }),
    };
  }
}
