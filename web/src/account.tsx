/** Who is logged in (`GET /auth/me`): the whole app reads it, and reloads it after anything that spends credits. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { api, data } from './api/client.ts';

export interface Me {
  logged_in: boolean;
  ai_name?: string;
  via?: string;
  user?: { id: string; email: string | null; plan: string };
  credits?: { balance: number; held: number; used: number };
  linked_apps?: string[];
}

export async function loadMe(): Promise<Me> {
  return (await data(api.GET('/auth/me'))) as Me;
}

export interface AccountContext {
  me: Me;
  reload(): Promise<void>;
}

export const Account = createContext<AccountContext>({ me: { logged_in: false }, reload: async () => undefined });

export function useAccount(): AccountContext {
  return useContext(Account);
}
