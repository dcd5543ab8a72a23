/** Contracts of teams: members, invitations, broadcasts (api/openapi/contract.ts). */
import { z } from 'zod';
import { isoDate, json, redirect, route } from '../../../openapi/contract.ts';
import { acceptQuerySchema, broadcastSchema, createTeamSchema, inviteSchema, pathIdSchema } from './schema.ts';

const tags = ['Teams'];
const role = z.enum(['owner', 'member']);

const team = z.strictObject({
  id: z.string(),
  name: z.string(),
  role,
  member_count: z.number().int(),
  created_by: z.string(),
  created_at: isoDate,
});
const teamParams = z.object({ team_id: pathIdSchema });
const operatorRefused = { 400: 'The operator key has no account, so no teams' };
const notMember = { ...operatorRefused, 404: 'No such team of the caller’s' };

export const teamContracts = [
  route({
    method: 'POST',
    path: '/teams',
    summary: 'Create a team (the caller its owner)',
    tags,
    access: 'caller',
    request: { body: createTeamSchema },
    responses: { 201: json(team, 'The team') },
    errors: operatorRefused,
  }),
  route({
    method: 'GET',
    path: '/teams',
    summary: 'The caller’s teams',
    tags,
    access: 'caller',
    responses: { 200: json(z.strictObject({ teams: z.array(team) }), 'The teams') },
    errors: operatorRefused,
  }),
  route({
    method: 'GET',
    path: '/teams/invitations/accept',
    summary: 'Accept an invitation (the link in its e-mail)',
    description:
      'Without a login the invitation logs the invitee in (the account made on first use, the session cookie set). JSON with Accept: application/json, else a redirect to the front page.',
    tags,
    access: 'optional',
    request: { query: acceptQuerySchema },
    responses: {
      200: json(
        z.strictObject({
          accepted: z.literal(true),
          team: z.strictObject({ id: z.string(), name: z.string() }),
          role,
          user: z.strictObject({ id: z.string(), email: z.string().nullable() }),
          logged_in: z.boolean().meta({ description: 'Whether this request logged the invitee in' }),
        }),
        'Joined',
      ),
      302: redirect('Joined: to AGENT_PUBLIC_URL or `/`'),
    },
    errors: { 403: 'The invitation was sent to another address than the caller’s' },
  }),
  route({
    method: 'GET',
    path: '/teams/:team_id',
    summary: 'A team and its members',
    tags,
    access: 'caller',
    request: { params: teamParams },
    responses: {
      200: json(
        team.extend({
          members: z.array(
            z.strictObject({ user_id: z.string(), email: z.string().nullable(), role, joined_at: isoDate }),
          ),
        }),
        'The team',
      ),
    },
    errors: notMember,
  }),
  route({
    method: 'POST',
    path: '/teams/:team_id/invite',
    summary: 'Invite someone by e-mail (owners)',
    tags,
    access: 'caller',
    request: { params: teamParams, body: inviteSchema },
    responses: {
      201: json(
        z.strictObject({
          invitation: z.strictObject({
            id: z.string(),
            email: z.string(),
            role,
            expires_at: isoDate,
            team_id: z.string(),
          }),
          sent: z.literal(true),
          message: z.string(),
        }),
        'Invited',
      ),
    },
    errors: {
      ...notMember,
      403: 'Only an owner may invite',
      409: 'That address is a member already',
      503: 'The e-mail could not be sent',
    },
  }),
  route({
    method: 'POST',
    path: '/teams/:team_id/broadcast',
    summary: 'Send a message to every member (their sessions and linked apps)',
    tags,
    access: 'caller',
    request: { params: teamParams, body: broadcastSchema },
    responses: { 202: json(z.strictObject({ id: z.string(), status: z.string() }), 'Started') },
    errors: notMember,
  }),
  route({
    method: 'GET',
    path: '/teams/:team_id/broadcasts/:broadcast_id',
    summary: 'A broadcast’s deliveries',
    tags,
    access: 'caller',
    request: { params: z.object({ team_id: pathIdSchema, broadcast_id: pathIdSchema }) },
    responses: {
      200: json(
        z.strictObject({
          id: z.string(),
          team_id: z.string(),
          sender_id: z.string(),
          message: z.string(),
          status: z.string(),
          source: z.enum(['workflow', 'table']),
          created_at: isoDate,
          finished_at: isoDate.nullable(),
          deliveries: z.array(
            z.strictObject({
              user_id: z.string(),
              email: z.string().nullable(),
              status: z.string(),
              session: z.enum(['delivered', 'pending']),
              channels: z.array(
                z.strictObject({
                  platform: z.string(),
                  status: z.enum(['delivered', 'failed', 'pending']),
                  error: z.string().optional(),
                }),
              ),
              delivered_at: isoDate.nullable(),
              error: z.string().nullable(),
            }),
          ),
        }),
        'The broadcast',
      ),
    },
    errors: notMember,
  }),
];
