/**
 * Tessera as an OAuth client of Google (or of any OpenID provider at GOOGLE_ISSUER: the tests' oidc-provider, the
 * simulator's issuer): the provider's configuration by discovery (`<issuer>/.well-known/openid-configuration`,
 * through openid-client v6), shared by the login (api/services/logins/google.ts) and the token refresh the workspace
 * tools need (./google-accounts.ts), so both use the token endpoint the provider publishes.
 *
 * Discovery runs on first use and is cached; a failed discovery is retried on the next call. Plain-http issuers are
 * allowed on loopback hosts only (a local or test provider).
 */
import * as oidc from 'openid-client';

export interface GoogleClientSettings {
  clientId: string;
  clientSecret: string;
  issuer: string;
}

/** The provider could not be reached (discovery or the token endpoint): trying again later may work. */
export class ProviderUnreachableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ProviderUnreachableError';
  }
}

export class GoogleOAuthClient {
  readonly settings: GoogleClientSettings;
  private configuration: Promise<oidc.Configuration> | null = null;

  constructor(settings: GoogleClientSettings) {
    this.settings = settings;
  }

  /** The provider's configuration (discovered once). Throws `ProviderUnreachableError`. */
  config(): Promise<oidc.Configuration> {
    this.configuration ??= (async () => {
      const issuer = new URL(this.settings.issuer);
      const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(issuer.hostname);
      return oidc.discovery(issuer, this.settings.clientId, this.settings.clientSecret, undefined, {
        timeout: 10,
        ...(issuer.protocol === 'http:' && loopback ? { execute: [oidc.allowInsecureRequests] } : {}),
      });
    })().catch((error: unknown) => {
      this.configuration = null;
      throw new ProviderUnreachableError(
        `The identity provider ${this.settings.issuer} could not be reached: ${(error as Error).message}`,
        { cause: error },
      );
    });
    return this.configuration;
  }

  /**
   * A new access token for a refresh token (`grant_type=refresh_token` at the provider's token endpoint). Throws
   * openid-client's `ResponseBodyError` when the provider refuses (`invalid_grant`: revoked or expired), and
   * `ProviderUnreachableError` when it cannot be reached.
   */
  async refresh(refreshToken: string): Promise<oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers> {
    const config = await this.config();
    try {
      return await oidc.refreshTokenGrant(config, refreshToken);
    } catch (error) {
      // A refusal (4xx with an OAuth error) is the provider's answer; a 5xx, an answer that is not OAuth's, or none
      // at all may pass.
      if (error instanceof oidc.ResponseBodyError && error.status < 500) throw error;
      throw new ProviderUnreachableError(`The identity provider's token endpoint failed: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
}

/** Whether an error is the provider's refusal of a refresh token (revoked by the user, or expired). */
export function isInvalidGrant(error: unknown): boolean {
  return error instanceof oidc.ResponseBodyError && error.error === 'invalid_grant';
}
