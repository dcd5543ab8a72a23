/** Contracts of logins, linking and the agent service's keys (api/openapi/contract.ts). */
import { z } from 'zod';
import { workspaceNames } from '../../../../common/agents.ts';
import { isoDate, json, redirect, route } from '../../../openapi/contract.ts';
import { createKeyBodySchema, linkVerifyBodySchema, registerBodySchema, verifyQuerySchema } from './schema.ts';

const tags = ['Login and accounts'];

const user = z.strictObject({ id: z.string(), email: z.string().nullable(), plan: z.string() });
/** After a login: JSON for a client that asks for it (Accept: application/json), else a redirect to the front page. */
const loggedIn = {
  200: {
    ...json(z.strictObject({ logged_in: z.literal(true), user }), 'Logged in (Accept: application/json)'),
    headers: z.object({ 'set-cookie': z.string().meta({ description: 'The `tessera_session` cookie' }) }),
  },
  302: redirect('Logged in: to AGENT_PUBLIC_URL or `/`, with the `tessera_session` cookie set'),
};
const operatorRefused = { 400: 'The operator key has no account' };

export const authContracts = [
  route({
    method: 'POST',
    path: '/auth/register',
    summary: 'Mail a magic login link',
    description:
      'Answers the same whatever the address (no account enumeration); the link works once, within 15 minutes.',
    tags,
    access: 'public',
    request: { body: registerBodySchema },
    responses: { 200: json(z.strictObject({ sent: z.literal(true), message: z.string() }), 'Sent (or not)') },
    errors: { 503: 'The e-mail could not be sent, or AGENT_PUBLIC_URL is needed' },
  }),
  route({
    method: 'GET',
    path: '/auth/verify',
    summary: 'Use a magic link: log in',
    tags,
    access: 'public',
    request: { query: verifyQuerySchema },
    responses: loggedIn,
  }),
  route({
    method: 'POST',
    path: '/auth/logout',
    summary: 'End the cookie’s session',
    tags,
    access: 'optional',
    responses: {
      200: json(z.strictObject({ logged_out: z.literal(true), session_ended: z.boolean() }), 'Logged out'),
    },
  }),
  route({
    method: 'GET',
    path: '/auth/me',
    summary: 'Who the caller is',
    tags,
    access: 'optional',
    responses: {
      200: json(
        z.union([
          z.strictObject({ logged_in: z.literal(false), ai_name: z.string() }),
          z.strictObject({
            logged_in: z.literal(true),
            via: z.enum(['cookie', 'key']),
            operator: z.literal(true).optional(),
            user: user.nullable(),
            admin: z
              .literal(true)
              .optional()
              .meta({ description: 'A logged-in admin: the operator console (`/admin`) is theirs' }),
            credits: z.strictObject({ balance: z.number(), held: z.number(), used: z.number() }).nullable(),
            linked_apps: z.array(z.string()),
            ai_name: z.string(),
          }),
        ]),
        'The caller, or `logged_in: false`',
      ),
    },
    errors: { 404: 'The account no longer exists' },
  }),
  route({
    method: 'GET',
    path: '/auth/google',
    summary: 'Log in with Google',
    tags,
    access: 'public',
    responses: { 302: redirect('To Google’s consent page') },
    errors: { 503: 'Google login is not configured' },
  }),
  route({
    method: 'GET',
    path: '/auth/google/callback',
    summary: 'Google’s redirect back',
    tags,
    access: 'public',
    request: {
      query: z.looseObject({ code: z.string().optional(), state: z.string().optional(), error: z.string().optional() }),
    },
    responses: loggedIn,
    errors: {
      403: 'Google did not confirm the account’s e-mail address',
      502: 'Google could not be reached',
      503: 'Google login is not configured',
    },
  }),
  route({
    method: 'GET',
    path: '/auth/google/status',
    summary: 'The caller’s Google connection and which workspace agents it enables',
    tags,
    access: 'caller',
    responses: {
      200: json(
        z.strictObject({
          connected: z.boolean(),
          email: z.string().nullable(),
          scopes: z.array(z.string()),
          workspace_scopes_granted: z.boolean(),
          missing_scopes: z.array(z.string()),
          agents: z.record(z.enum(workspaceNames), z.boolean()),
        }),
        'The connection',
      ),
    },
    errors: operatorRefused,
  }),
  route({
    method: 'GET',
    path: '/link/code',
    summary: 'A code (and deep links) to link a LINE, Telegram or Slack chat to the account',
    tags: ['Messaging apps'],
    access: 'caller',
    responses: {
      200: json(
        z.strictObject({
          code: z.string().nullable(),
          expires_at: isoDate.nullable(),
          expires_in: z.number().int().meta({ description: 'Seconds' }),
          links: z.record(z.string(), z.string()),
          instructions: z.string(),
        }),
        'The code',
      ),
    },
    errors: operatorRefused,
  }),
  route({
    method: 'POST',
    path: '/link/verify',
    summary: 'Redeem a code a bot gave: link that chat to the account',
    tags: ['Messaging apps'],
    access: 'caller',
    request: { body: linkVerifyBodySchema },
    responses: {
      200: json(
        z.strictObject({
          linked: z.literal(true),
          already: z.boolean(),
          channel: z.string().nullable(),
          message: z.string(),
        }),
        'Linked',
      ),
    },
    errors: { 403: 'The chat belongs to another account', 409: 'A turn is running in a conversation being joined' },
  }),
  route({
    method: 'POST',
    path: '/api/keys',
    summary: 'Create an API key',
    tags: ['API keys'],
    access: 'caller',
    request: { body: createKeyBodySchema },
    responses: {
      201: json(
        z.strictObject({
          id: z.string(),
          name: z.string().nullable(),
          key: z.string().meta({ description: 'The secret, shown this once' }),
          key_preview: z.string(),
          created_at: isoDate,
          message: z.string(),
        }),
        'The key',
      ),
    },
    errors: operatorRefused,
  }),
  route({
    method: 'GET',
    path: '/api/keys',
    summary: 'The caller’s API keys',
    tags: ['API keys'],
    access: 'caller',
    responses: {
      200: json(
        z.strictObject({
          keys: z.array(
            z.strictObject({
              id: z.string(),
              name: z.string().nullable(),
              key_preview: z.string(),
              created_at: isoDate,
              last_used_at: isoDate.nullable(),
            }),
          ),
        }),
        'The keys',
      ),
    },
    errors: operatorRefused,
  }),
  route({
    method: 'DELETE',
    path: '/api/keys/:id',
    summary: 'Revoke an API key',
    tags: ['API keys'],
    access: 'caller',
    responses: { 200: json(z.strictObject({ id: z.string(), deleted: z.literal(true) }), 'Revoked') },
    errors: { ...operatorRefused, 404: 'No such key of the caller’s' },
  }),
];
