/**
 * The few parts of oidc-provider (v9, which ships no types) the OAuth test uses: a provider configured with clients,
 * scopes, claims and an account finder, whose Koa app answers HTTP through `callback()`.
 */
declare module 'oidc-provider' {
  import type { RequestListener } from 'node:http';

  interface ProviderClient {
    grantTypeAllowed(type: string): boolean;
  }

  interface ProviderAccount {
    accountId: string;
    claims(): Record<string, unknown> | Promise<Record<string, unknown>>;
  }

  interface ProviderConfiguration {
    clients?: Array<Record<string, unknown>>;
    scopes?: string[];
    claims?: Record<string, string[]>;
    extraParams?: string[];
    cookies?: { keys?: string[] };
    pkce?: { required?: () => boolean };
    features?: Record<string, { enabled: boolean }>;
    issueRefreshToken?: (context: unknown, client: ProviderClient, code: unknown) => boolean | Promise<boolean>;
    findAccount?: (
      context: unknown,
      subject: string,
    ) => ProviderAccount | undefined | Promise<ProviderAccount | undefined>;
  }

  export default class Provider {
    constructor(issuer: string, configuration?: ProviderConfiguration);
    callback(): RequestListener;
    on(event: string, listener: (...args: never[]) => void): this;
  }
}
