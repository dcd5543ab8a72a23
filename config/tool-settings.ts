/**
 * What the built-in tools (activities/tools/) are configured with: read from the environment by config/settings.ts
 * (`toolSettingsOf`), handed to every tool in its context.
 */
export interface ToolSettings {
  /** Root directory of the per-session sandboxes (file tools, code_execute). */
  sandboxRoot: string;
  /** Bytes a session's sandbox may hold. */
  sandboxQuotaBytes: number;
  /** The tool engines that start with the process (ENGINES_WARM_AT_START; default none: each at its first call). */
  enginesWarmAtStart?: Array<'calculator' | 'javascript' | 'python'>;
  geocodingApiUrl: string;
  weatherApiUrl: string;
  searxngUrl?: string;
  braveSearchApiKey?: string;
  braveSearchApiUrl: string;
  tavilyApiKey?: string;
  tavilyApiUrl: string;
  /** Hosts web_fetch may reach although they are not public (tests and the bench point it at loopback). */
  fetchAllowedHosts: string[];
  /** An SMTP server is configured (send_email). */
  mailConfigured?: boolean;
  /** Remote A2A agents by name (A2A_REMOTE_AGENTS): the cards delegate_to_agent may use. */
  a2aRemoteAgents?: Record<string, string>;
  /** Google login is configured (client, secret, token key): the workspace tools are offered. */
  google?: {
    /** Where a user whose Google login is missing or revoked logs in (AGENT_PUBLIC_URL's /auth/google). */
    loginUrl: string;
  };
}
