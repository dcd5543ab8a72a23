/**
 * Teams (spec 4.10; docs/teams-and-a2a.md). Every endpoint needs a login except accepting an invitation,
 * whose link is itself the credential. A team is visible to its members only: to anyone else it does not exist
 * (404). The operator key has no account, so it has no teams (400).
 *
 * - `POST /teams {name}` → 201: the caller is its first owner.
 * - `GET /teams` → the caller's teams with their role and member count; `GET /teams/{id}` → one, with its members.
 * - `POST /teams/{id}/invite {email, role?}` → 201: owners only (403 for a member). Mails a link
 *   `<AGENT_PUBLIC_URL or the local origin>/teams/invitations/accept?token=…` valid 7 days, once. 409 when that
 *   address's account is a member already; 429 past `invitationLimits` per team.
 * - `GET /teams/invitations/accept?token=` uses the invitation for the account of the address it was sent to:
 *   a caller logged in with that address joins; a caller logged in as someone else is refused (403, the link stays
 *   usable); an anonymous caller (the usual case: a link opened from the mail) is logged in as that address like a
 *   magic link (the account made on first use, the session cookie set) and joins. Then a redirect to
 *   AGENT_PUBLIC_URL or `/`, or 200 `{accepted, team, role, user, logged_in}` for a client that prefers JSON. A
 *   used, forged or expired link: 400.
 * - `POST /teams/{id}/broadcast {message}` → 202 `{id, status}`: any member (429 past `broadcastLimits` per team).
 *   The message goes to every member's session `team:<team id>` and their linked LINE/Telegram chats, by the
 *   `teamBroadcast` workflow (`broadcast-<id>`).
 * - `GET /teams/{id}/broadcasts/{broadcast_id}` → its status and per-member delivery states (members only).
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import { normalizeEmail } from '../../../../common/email.ts';
import type { Settings } from '../../../../config/settings.ts';
import type { Pool } from '../../../../db/pool.ts';
import { requireCaller, type CallerState } from '../../../auth.ts';
import { ApiError, invalidRequest } from '../../../errors.ts';
import type { RateLimits } from '../../../rate-limit.ts';
import type { ApiKeyService, Principal } from '../../../services/apikeys/service.ts';
import { secureCookies, setSessionCookie, type WebSessions } from '../../../services/logins/web-sessions.ts';
import type { TeamRole, TeamService } from '../../../services/teams/service.ts';
import { linkBase } from '../auth/routes.ts';
import { acceptQuerySchema, broadcastSchema, createTeamSchema, inviteSchema, pathIdSchema } from './schema.ts';

/** Invitation mails per team. */
export const invitationLimits = { per_hour: 20, per_day: 100 };
/** Broadcasts per team (each reaches every member's chats). */
export const broadcastLimits = { per_hour: 30, per_day: 200 };

export interface TeamRouteDependencies {
  teams: TeamService;
  settings: Settings;
  pool: Pool;
  keys: ApiKeyService;
  sessions: WebSessions;
  limits: RateLimits | undefined;
  log: (fields: Record<string, unknown>, message: string) => void;
}

export function teamRoutes(dependencies: TeamRouteDependencies) {
  const { teams, settings, keys, sessions, limits } = dependencies;
  const router = new Router<CallerState>();

  const account = (principal: Principal): string => {
    if (principal.operator) {
      throw new ApiError(
        'invalid_request',
        'The operator key has no account, so no teams: log in, or use a user’s key',
      );
    }
    return principal.userId;
  };

  /** The caller's role in the path's team; 404 for anyone who is not a member. */
  const membership = async (
    context: Context & { state: CallerState },
  ): Promise<{ userId: string; teamId: string; role: TeamRole }> => {
    const userId = account(requireCaller(context.state));
    const teamId = context.params.team_id!;
    const role = pathIdSchema.safeParse(teamId).success ? await teams.role(userId, teamId) : null;
    if (!role) throw new ApiError('not_found', `No team '${teamId}'`);
    return { userId, teamId, role };
  };

  router.post('/teams', async (context) => {
    const userId = account(requireCaller(context.state));
    const parsed = createTeamSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    context.status = 201;
    context.body = await teams.create(userId, parsed.data.name);
  });

  router.get('/teams', async (context) => {
    const userId = account(requireCaller(context.state));
    context.body = { teams: await teams.list(userId) };
  });

  router.get('/teams/invitations/accept', async (context) => {
    const parsed = acceptQuerySchema.safeParse(context.query);
    if (!parsed.success) throw invalidRequest(parsed.error);
    const refused = () =>
      new ApiError(
        'invalid_request',
        'This invitation link is invalid, already used or expired: ask a team owner for a new one',
      );
    const invitation = await teams.invitation(parsed.data.token);
    if (!invitation) throw refused();
    const principal = context.state.principal;
    let user: { id: string; email: string | null };
    if (principal) {
      const userId = account(principal);
      const { rows } = await dependencies.pool.query<{ email: string | null }>(
        'select email from users where id = $1',
        [userId],
      );
      const email = rows[0]?.email;
      if (!email || normalizeEmail(email) !== invitation.email) {
        throw new ApiError(
          'permission_denied',
          'This invitation was sent to another address: log out, or log in with the address it was sent to',
        );
      }
      user = { id: userId, email };
    } else {
      const created = await keys.ensureUser({ email: invitation.email });
      user = { id: created.id, email: created.email ?? null };
    }
    const role = await teams.accept(invitation, user.id);
    if (!role) throw refused();
    if (!principal) {
      const session = await sessions.create(user.id, 'magic_link');
      setSessionCookie(context, session.token, session.expiresAt, secureCookies(context, settings.AGENT_PUBLIC_URL));
    }
    if (context.accepts('html', 'json') === 'json') {
      context.body = {
        accepted: true,
        team: { id: invitation.teamId, name: invitation.teamName },
        role,
        user,
        logged_in: !principal,
      };
      return;
    }
    context.redirect(settings.AGENT_PUBLIC_URL ?? '/');
  });

  router.get('/teams/:team_id', async (context) => {
    const { userId, teamId } = await membership(context);
    const team = await teams.details(userId, teamId);
    if (!team) throw new ApiError('not_found', `No team '${teamId}'`);
    context.body = team;
  });

  router.post('/teams/:team_id/invite', async (context) => {
    const { userId, teamId, role } = await membership(context);
    if (role !== 'owner') throw new ApiError('permission_denied', 'Only an owner of the team may invite');
    const parsed = inviteSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    const base = linkBase(settings, context);
    if (limits) {
      await limits.enforce(context, {
        key: `team-invitations:${teamId}`,
        limits: invitationLimits,
        scope: 'invitations of this team',
      });
    }
    let invitation;
    try {
      invitation = await teams.invite({ userId, teamId }, parsed.data, base);
    } catch (error) {
      if (error instanceof ApiError) throw error;
      dependencies.log({ err: error }, 'team invitation e-mail could not be sent');
      throw new ApiError('service_unavailable', 'The invitation e-mail could not be sent; try again later');
    }
    context.status = 201;
    context.body = {
      invitation: { ...invitation, team_id: teamId },
      sent: true,
      message: `An invitation is on its way to ${invitation.email}; its link works once, within 7 days.`,
    };
  });

  router.post('/teams/:team_id/broadcast', async (context) => {
    const { userId, teamId } = await membership(context);
    const parsed = broadcastSchema.safeParse(context.request.body ?? {});
    if (!parsed.success) throw invalidRequest(parsed.error);
    if (limits) {
      await limits.enforce(context, {
        key: `team-broadcasts:${teamId}`,
        limits: broadcastLimits,
        scope: 'broadcasts of this team',
      });
    }
    const started = await teams.broadcast(userId, teamId, parsed.data.message);
    context.status = 202;
    context.set('Location', `/teams/${teamId}/broadcasts/${started.id}`);
    context.body = started;
  });

  router.get('/teams/:team_id/broadcasts/:broadcast_id', async (context) => {
    const { teamId } = await membership(context);
    const broadcastId = context.params.broadcast_id!;
    const found = pathIdSchema.safeParse(broadcastId).success ? await teams.broadcastStatus(teamId, broadcastId) : null;
    if (!found) throw new ApiError('not_found', `No broadcast '${broadcastId}' in this team`);
    context.body = found;
  });

  return router;
}
