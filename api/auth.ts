/** Bearer-key authentication: puts the principal on `ctx.state.principal` or answers 401. */
import type { Middleware } from 'koa';
import { ApiError } from './errors.ts';
import type { ApiKeyService, Principal } from './routes/apikeys/service.ts';

export interface AuthState {
  principal: Principal;
}

export function requireKey(keys: ApiKeyService): Middleware<AuthState> {
  return async (context, next) => {
    const header = context.get('authorization');
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match) throw new ApiError('authentication_error', 'Missing API key: send Authorization: Bearer <API_KEY>');
    const principal = await keys.authenticate(match[1]!);
    if (!principal) throw new ApiError('authentication_error', 'Invalid or revoked API key');
    context.state.principal = principal;
    await next();
  };
}
