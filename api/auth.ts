/**
 * Bearer-key authentication: puts the principal on `ctx.state.principal` or answers 401. `optionalKey` lets a
 * request without any key through as a guest (`principal` unset); a key that is sent must be valid.
 */
import type { Middleware } from 'koa';
import { ApiError } from './errors.ts';
import type { ApiKeyService, Principal } from './routes/apikeys/service.ts';
import type { ServerTiming } from './server-timing.ts';

export interface AuthState {
  principal: Principal;
  /** Stage timings of this request (set by the request observer), for Server-Timing. */
  timing?: ServerTiming;
}

export function requireKey(keys: ApiKeyService): Middleware<AuthState> {
  return authenticate(keys, false);
}

/** As `requireKey`, but a request that sends no key at all goes on as a guest. */
export function optionalKey(keys: ApiKeyService): Middleware<Partial<AuthState>> {
  return authenticate(keys, true) as Middleware<Partial<AuthState>>;
}

function authenticate(keys: ApiKeyService, guestsAllowed: boolean): Middleware<AuthState> {
  return async (context, next) => {
    const header = context.get('authorization');
    if (!header && guestsAllowed) return next();
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match) throw new ApiError('authentication_error', 'Missing API key: send Authorization: Bearer <API_KEY>');
    context.state.timing?.mark('receive');
    const principal = await keys.authenticate(match[1]!);
    if (!principal) throw new ApiError('authentication_error', 'Invalid or revoked API key');
    context.state.timing?.mark('auth');
    context.state.principal = principal;
    await next();
  };
}
