/** Who is logged in (`GET /auth/me`): the whole app reads it, and reloads it after anything that spends credits. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { api, data, type Answer } from './api/client.ts';

export type Me = Answer<'/auth/me', 'get'>;
/** The answer for a logged-in caller: what every page but the login page sees. */
export type LoggedIn = Extract<Me, { logged_in: true }>;

export async function loadMe(): Promise<Me> {
  return data(api.GET('/auth/me'));
}

export interface AccountContext {
  me: LoggedIn;
  reload(): Promise<void>;
}

/** Provided by the shell (app.tsx) once someone is logged in. */
export const Account = createContext<AccountContext | null>(null);

export function useAccount(): AccountContext {
  const account = useContext(Account);
  if (!account) throw new Error('useAccount() outside the logged-in shell');
  return account;
}
