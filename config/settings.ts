/** Process settings from the environment, validated once at start-up. Every variable is in .env.example. */
import { resolve } from 'node:path';
import type { Duration } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time.js';
import { z } from 'zod';
import { completionsTaskQueue } from '../common/completion.ts';
import type { MessengerSettings } from '../common/messengers.ts';
import type { ToolSettings } from './tool-settings.ts';
import { parseTrustedProxies } from './trusted-proxies.ts';

/** An optional variable where an empty value (`STRIPE_SECRET_KEY=` in a copied .env) means unset. */
const optionalText = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (value === '' ? undefined : value), schema.optional());

/** A Temporal duration ('15 minutes', '90s', '1 minute'), read as milliseconds; at least 1 ms. */
const durationMilliseconds = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((value, context) => {
      try {
        const parsed = msToNumber(value as Duration);
        if (parsed > 0) return parsed;
      } catch {
        // reported below
      }
      context.addIssue({ code: 'custom', message: 'must be a duration such as "15 minutes" or "90s"' });
      return z.NEVER;
    });

/** A Temporal duration kept as written ('1 hour', '90s'), checked: what a Temporal schedule or timer takes. */
const duration = (fallback: Duration & string) =>
  z
    .string()
    .default(fallback)
    .transform((value, context) => {
      try {
        if (msToNumber(value as Duration) > 0) return value as Duration;
      } catch {
        // reported below
      }
      context.addIssue({ code: 'custom', message: 'must be a duration such as "1 hour" or "90s"' });
      return z.NEVER;
    });

/** A comma-separated list (entries trimmed, empty ones dropped), `fallback` when unset. */
const commaList = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((value) =>
      value
        .split(',')
        .map((entry) => entry.trim())
        .filter(Boolean),
    );

/** A Replicate model: `owner/name`, optionally pinned to a version. */
const replicateModel = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+(?::[0-9a-f]{64})?$/;

const settingsSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default('0.0.0.0'),
  /**
   * The reverse proxies whose X-Forwarded-For/-Proto/-Host are believed (api/forwarding.ts): addresses, CIDR ranges,
   * `loopback`/`linklocal`/`uniquelocal`, comma-separated; or a number of hops. Empty: nobody's (the default).
   */
  TRUSTED_PROXIES: z
    .string()
    .default('')
    .transform((value, context) => {
      try {
        return parseTrustedProxies(value);
      } catch (error) {
        context.addIssue({
          code: 'custom',
          message: `must list addresses or CIDR ranges (or loopback, linklocal, uniquelocal), or be a number of hops: ${(error as Error).message}`,
        });
        return z.NEVER;
      }
    }),
  /** The agent service's port (docs/agent-service.md). */
  AGENT_PORT: z.coerce.number().int().min(0).max(65535).default(8081),
  /** Which HTTP services this API process serves: `gateway`, `agents`, or both (comma-separated). */
  API_SERVICES: commaList('gateway,agents').pipe(
    z.array(z.enum(['gateway', 'agents'])).min(1, 'name gateway, agents or both'),
  ),
  DATABASE_URL: z.string().min(1),
  TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().default(completionsTaskQueue),
  MASTER_KEY: z
    .string()
    .regex(/^te_[A-Za-z0-9_-]{16,}$/, 'MASTER_KEY must start with te_ and have at least 16 more characters')
    .optional(),
  BREAKER_FAILURE_THRESHOLD: z.coerce.number().int().positive().default(5),
  BREAKER_COOLDOWN_MS: z.coerce.number().int().positive().default(30_000),
  BREAKER_PROBE_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
  BREAKER_SNAPSHOT_TTL_MS: z.coerce.number().int().min(0).default(1_000),
  PROVIDER_CONNECT_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  PROVIDER_IDLE_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  PROVIDER_REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
  /** How often the credit renewal schedule runs (a Temporal duration string). */
  CREDIT_RENEWAL_INTERVAL: duration('1 hour'),
  /** How often the sweep of abandoned credit holds runs (activities/credits/abandoned-holds.ts; a Temporal duration). */
  CREDIT_HOLD_SWEEP_INTERVAL: duration('1 minute'),
  /**
   * How old a hold must be before that sweep asks Temporal about its workflow (read as milliseconds): longer than
   * an API process takes from holding credits to starting the workflow that settles them.
   */
  CREDIT_HOLD_GRACE: durationMilliseconds('1 minute'),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().positive().default(30_000),
  /**
   * Tests only (the test platform sets it): every answer of both services is held against their OpenAPI documents,
   * and one that does not match becomes a 500 naming the difference (api/openapi/response-check.ts). Off by default.
   */
  OPENAPI_RESPONSE_CHECK: z
    .enum(['true', 'false', '1', '0', ''])
    .default('false')
    .transform((value) => value === 'true' || value === '1'),
  /** Record workflow stack traces for the Web UI's stack-trace query (costs CPU per completion; worker/create-worker.ts). */
  TEMPORAL_WORKFLOW_STACK_TRACES: z
    .enum(['true', 'false'])
    .default('false')
    .transform((value) => value === 'true'),
  // Billing (Stripe). Without STRIPE_SECRET_KEY checkout/portal/coupon answer 503; without
  // STRIPE_WEBHOOK_SECRET the webhook does. STRIPE_API_BASE points the client elsewhere (stripe-mock in tests).
  STRIPE_SECRET_KEY: optionalText(z.string()),
  STRIPE_WEBHOOK_SECRET: optionalText(z.string()),
  STRIPE_API_BASE: optionalText(z.url({ protocol: /^https?$/ })),
  STRIPE_PRICE_STARTER: optionalText(z.string()),
  STRIPE_PRICE_PRO: optionalText(z.string()),
  BILLING_SUCCESS_URL: z.url().default('http://localhost:8080/billing/success?session_id={CHECKOUT_SESSION_ID}'),
  BILLING_CANCEL_URL: z.url().default('http://localhost:8080/billing/cancel'),
  BILLING_PORTAL_RETURN_URL: z.url().default('http://localhost:8080/billing'),
  // Hosted media engines (docs/media.md, "Hosted engines"). OpenAI's use OPENAI_API_KEY and OPENAI_BASE_URL.
  ELEVENLABS_API_KEY: optionalText(z.string()),
  /** Without `/v1`. */
  ELEVENLABS_BASE_URL: z.url({ protocol: /^https?$/ }).default('https://api.elevenlabs.io'),
  REPLICATE_API_TOKEN: optionalText(z.string()),
  /** Without `/v1`. */
  REPLICATE_BASE_URL: z.url({ protocol: /^https?$/ }).default('https://api.replicate.com'),
  /** `owner/name` (an official model) or `owner/name:<version id>`. */
  REPLICATE_MUSIC_MODEL: z
    .string()
    .regex(replicateModel, 'owner/name or owner/name:<version>')
    .default('meta/musicgen'),
  REPLICATE_VIDEO_MODEL: z
    .string()
    .regex(replicateModel, 'owner/name or owner/name:<version>')
    .default('kwaivgi/kling-v1.6-standard'),
  // Replicate's background remover and upscaler (community models: pin a version).
  REPLICATE_REMOVE_BG_MODEL: z
    .string()
    .regex(replicateModel, 'owner/name or owner/name:<version>')
    .default('851-labs/background-remover:a029dff38972b5fda4ec5d75d7d1cd25aeff621d2cf4946a41055d7db66b80bc'),
  REPLICATE_UPSCALE_MODEL: z
    .string()
    .regex(replicateModel, 'owner/name or owner/name:<version>')
    .default('nightmareai/real-esrgan:f121d640bd286e1fdc67f9799164c1d5be36ff74576ee11c803ae5b665dd46aa'),
  // Media jobs (docs/media.md, "Media files"): where files are stored, how long they are kept, video poll interval.
  MEDIA_DIR: z.string().default(resolve('.data/media')),
  /** Days a media file is served before it expires (fractions allowed: 0.5 is 12 hours). */
  MEDIA_FILE_TTL_DAYS: z.coerce.number().positive().default(7),
  /** How often the sweep of expired media files runs (a Temporal duration string). */
  MEDIA_SWEEP_INTERVAL: duration('1 hour'),
  /** Set: media files go to this S3-compatible bucket instead of MEDIA_DIR. */
  MEDIA_S3_BUCKET: optionalText(z.string()),
  /** The S3-compatible endpoint (MinIO: http://minio:9000); unset: AWS S3 in MEDIA_S3_REGION. */
  MEDIA_S3_ENDPOINT: optionalText(z.url({ protocol: /^https?$/ })),
  MEDIA_S3_REGION: z.string().min(1).default('us-east-1'),
  /** Unset: the AWS SDK's default credential chain (environment, instance or task role). */
  MEDIA_S3_ACCESS_KEY_ID: optionalText(z.string()),
  MEDIA_S3_SECRET_ACCESS_KEY: optionalText(z.string()),
  /** The bucket in the URL path (MinIO and most self-hosted stores); unset: true with an endpoint, false without. */
  MEDIA_S3_FORCE_PATH_STYLE: optionalText(z.enum(['true', 'false']).transform((value) => value === 'true')),
  /** Put before every object key, for a bucket shared with other data (e.g. `tessera/`). */
  MEDIA_S3_PREFIX: z.string().default(''),
  MEDIA_POLL_INTERVAL_MS: z.coerce.number().int().positive().default(15_000),
  // Media job callbacks (docs/media.md, "Media jobs: callbacks, cancel, list"): deliveries tried at most this many
  // times, with backoff.
  MEDIA_CALLBACK_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(10),
  /**
   * The embedding model of the RAG index (activities/rag/rag-model.ts); unset: the embedding default (EMBEDDING_MODEL,
   * else the first model with a configured provider, else the local engine). `npm start` sets `local-embedding` when
   * it simulates the providers, so its index is a real one.
   */
  RAG_EMBEDDING_MODEL: optionalText(z.string()),
  // Uploaded files (docs/files-and-rag.md): the largest file taken, and what one account's files may take.
  UPLOAD_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(100 * 1024 * 1024),
  UPLOAD_QUOTA_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024 * 1024),
  // The gateway's Files API (docs/client-apis.md, "Files"): the largest file and the most lines (requests) it takes.
  FILES_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(100 * 1024 * 1024),
  FILES_MAX_LINES: z.coerce.number().int().positive().default(50_000),
  /**
   * How long a batch may run before it expires (seconds; docs/client-apis.md, "Batches"): the `24h` its
   * `completion_window` names, unless the operator grants more (or, in tests, less).
   */
  BATCH_WINDOW_SECONDS: z.coerce
    .number()
    .int()
    .positive()
    .default(24 * 60 * 60),
  // Embeddings (docs/gateway.md, "Embeddings").
  /**
   * The embedding model of callers that name none (RAG indexing and search); unset: the first catalogue embedding
   * model whose provider has a key, else the local engine. `npm start` sets `local-embedding` when it simulates the
   * providers, so its index is made of real vectors.
   */
  EMBEDDING_MODEL: z
    .string()
    .optional()
    .transform((value) => value?.trim() || undefined),
  /** Inputs in one embedding request (OpenAI's own limit is 2,048). */
  EMBEDDING_MAX_INPUTS: z.coerce.number().int().positive().default(2048),
  /**
   * Tokens of all inputs of one embedding request together (each input is also held to its model's own limit). The
   * texts are the input of the request's workflow, in its history, where Temporal refuses a payload over 2 MB.
   */
  EMBEDDING_MAX_TOKENS: z.coerce.number().int().positive().default(100_000),
  // Session chat and built-in tools (docs/session-chat-and-tools.md).
  CHAT_DEFAULT_MODEL: z.string().min(1).default('gpt-4o-mini'),
  CHAT_MAX_TOOL_ROUNDS: z.coerce.number().int().min(0).max(32).default(8),
  SANDBOX_DIR: z.string().default(resolve('.data/sandboxes')),
  SANDBOX_QUOTA_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(50 * 1024 * 1024),
  /**
   * The tool engines each process starts with itself, so even its first call finds them loaded: `calculator` (mathjs
   * in a thread), `javascript` and `python` (code_execute's runners; activities/tools/code-execute.ts).
   * Comma-separated; default none: an engine starts at its process's first call and is kept warm from then on, so a
   * process whose requests use none of them does not carry them (issue 29: a Pyodide runner is 190 MiB per process).
   */
  ENGINES_WARM_AT_START: commaList('').pipe(z.array(z.enum(['calculator', 'javascript', 'python']))),
  GEOCODING_API_URL: z.url().default('https://geocoding-api.open-meteo.com'),
  WEATHER_API_URL: z.url().default('https://api.open-meteo.com'),
  SEARXNG_URL: optionalText(z.url()),
  BRAVE_SEARCH_API_KEY: optionalText(z.string()),
  BRAVE_SEARCH_API_URL: z.url().default('https://api.search.brave.com'),
  TAVILY_API_KEY: optionalText(z.string()),
  TAVILY_API_URL: z.url().default('https://api.tavily.com'),
  // Messaging apps (docs/channels.md). Each is on when its credentials are set.
  LINE_CHANNEL_SECRET: optionalText(z.string()),
  LINE_CHANNEL_ACCESS_TOKEN: optionalText(z.string()),
  /** An origin: the SDK resolves its paths (`/v2/bot/...`) from the root, so a path here is ignored. */
  LINE_API_BASE_URL: z.url().default('https://api.line.me'),
  TELEGRAM_BOT_TOKEN: optionalText(z.string()),
  TELEGRAM_WEBHOOK_SECRET: optionalText(z.string().regex(/^[A-Za-z0-9_-]{1,256}$/, 'Telegram allows A-Z a-z 0-9 _ -')),
  TELEGRAM_API_BASE_URL: z.url().default('https://api.telegram.org'),
  // Slack (docs/webhooks.md, "How to connect Slack"): an app installed in one workspace. Both or neither.
  SLACK_SIGNING_SECRET: optionalText(z.string()),
  /** The app's bot token (`xoxb-…`). */
  SLACK_BOT_TOKEN: optionalText(z.string()),
  /** Slack's Web API (the simulator's `${sim}/slack/api` under `npm start`). */
  SLACK_API_BASE_URL: z.url({ protocol: /^https?$/ }).default('https://slack.com/api'),
  // Inbound webhooks (docs/webhooks.md).
  /** GitHub's REST API, where the github_comment tool posts (the simulator's `${sim}/github` under `npm start`). */
  GITHUB_API_BASE_URL: z.url({ protocol: /^https?$/ }).default('https://api.github.com'),
  /**
   * How long `POST /automation/trigger` waits for its run to finish before it answers 202 and calls back (a Temporal
   * duration). Zapier and Make give up on a webhook after 30 s or more, so the default leaves room.
   */
  AUTOMATION_SYNC_WAIT: durationMilliseconds('25s'),
  /**
   * host or host:port entries web_fetch may reach although they are not public (a local test server); a bare host
   * allows its default ports (80 and 443) only.
   */
  // Agent service (docs/agent-service.md).
  /** The agent service's public origin: magic links, OAuth redirects and the CSRF origin check use it. */
  AGENT_PUBLIC_URL: optionalText(z.url({ protocol: /^https?$/ })),
  /** Further origins allowed to send cookie-authenticated POSTs (comma-separated), e.g. a separate web front end. */
  AGENT_ALLOWED_ORIGINS: commaList(''),
  /**
   * The operator console (`/admin`, docs/web-app.md, "Operator console"): e-mail addresses (comma-separated, compared
   * normalised) whose logged-in browser may open it besides the accounts with the `admin` role
   * (`npm run admin -- grant-admin`). For a deployment configured from its environment alone.
   */
  ADMIN_EMAILS: commaList(''),
  /**
   * The Temporal Web UI the console links each workflow to (`<url>/namespaces/<ns>/workflows/<id>/<run>/history`).
   * Unset: the dev server's UI that `npm start` runs, `http://127.0.0.1:<TEMPORAL_UI_PORT or 8233>`.
   */
  TEMPORAL_UI_URL: optionalText(z.url({ protocol: /^https?$/ })),
  /** SMTP server for magic links and the send_email tool (smtp://user:pass@host:port); unset: links are logged. */
  SMTP_URL: optionalText(z.string()),
  MAIL_FROM: z.string().default('Tessera <no-reply@tessera.local>'),
  /** 32+ characters; encrypts OAuth refresh tokens at rest. `npm start` generates one into .data/ when unset. */
  TOKEN_ENCRYPTION_KEY: optionalText(z.string().min(32)),
  GOOGLE_CLIENT_ID: optionalText(z.string()),
  GOOGLE_CLIENT_SECRET: optionalText(z.string()),
  GOOGLE_ISSUER: z.url().default('https://accounts.google.com'),
  /**
   * One base URL for every Google API the workspace tools call (each family's real path under it: /gmail/v1,
   * /calendar/v3, /drive/v3, /upload/drive/v3, /v4/spreadsheets, /v1/documents, /v1/people, /tasks/v1); unset: each
   * family's real host. The simulator's is <simulator>/google.
   */
  GOOGLE_API_BASE_URL: optionalText(z.url()),
  /** The assistant's name, shown by `GET /auth/me` (`ai_name`). */
  AGENT_AI_NAME: z.string().trim().min(1).max(80).default('Tessera'),
  /** The model agents answer with when their definition names none, and the fast model routing and suggestions use. */
  AGENT_DEFAULT_MODEL: z.string().min(1).default('gpt-4o-mini'),
  AGENT_ROUTER_MODEL: z.string().min(1).default('gpt-4o-mini'),
  /** Agent catalogue YAML (default config/agents.yaml). */
  AGENT_CATALOGUE_PATH: optionalText(z.string()),
  /** Spec 8's per-IP limit on /chat, /api and /a2a: requests per 60 seconds (0: off). */
  AGENT_IP_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(30),
  /** Agent loops: iterations at most, and how long an approval request waits before it is rejected. */
  AGENT_LOOP_MAX_ITERATIONS: z.coerce.number().int().min(1).max(200).default(20),
  /** A Temporal duration ('15 minutes', '90s'); read as milliseconds. */
  AGENT_APPROVAL_TIMEOUT: durationMilliseconds('15 minutes'),
  /** A loop continues as new after this many iterations, so its workflow history stays small. */
  AGENT_LOOP_ITERATIONS_PER_RUN: z.coerce.number().int().min(1).max(100).default(10),
  /** Memories loaded into an agent's context per message at most. */
  AGENT_MEMORY_LIMIT: z.coerce.number().int().min(0).max(50).default(5),
  /** Answers a message with an image when the routed agent's model cannot see images. */
  AGENT_VISION_MODEL: z.string().min(1).default('gpt-4o'),
  // Published sites (docs/published-sites.md).
  /** Sites are served on `<subdomain>.<SITE_DOMAIN>` by the agent service (a domain that is not the app's host). */
  SITE_DOMAIN: z
    .string()
    .trim()
    .toLowerCase()
    .regex(/^(?=.{1,200}$)[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/, 'a domain name')
    .default('localhost'),
  /** A site's public address, `{subdomain}` filled in (https://{subdomain}.sites.example.com/); unset: derived. */
  SITE_PUBLIC_URL_TEMPLATE: optionalText(
    z.url({ protocol: /^https?$/ }).refine((value) => value.includes('{subdomain}'), 'must contain {subdomain}'),
  ),
  /** Bytes (UTF-8) a site's HTML may hold. */
  SITE_MAX_BYTES: z.coerce.number().int().min(1024).max(10_485_760).default(1_048_576),
  /** Scheduled tasks: the least time between two firings of a task's cron, in seconds. */
  SCHEDULE_MIN_INTERVAL_SECONDS: z.coerce.number().int().min(1).default(60),
  /** Scheduled tasks: firings missed during downtime run afterwards if at most this old (a Temporal duration, ≥ 10s). */
  SCHEDULE_CATCHUP_WINDOW: z
    .string()
    .default('10 minutes')
    .refine((value) => {
      try {
        return msToNumber(value as Duration) >= 10_000;
      } catch {
        return false;
      }
    }, 'must be a duration of at least 10 seconds, such as "10 minutes"'),
  // Read-only SQL and table imports (docs/files-and-rag.md).
  /** The users' data database; unset: the platform's database name with `_data`, on its server, created on demand. */
  USER_DATA_DATABASE_URL: optionalText(z.string()),
  /** Rows `POST /sql/query` and the sql_query tool answer at most; a longer answer says `truncated`. */
  SQL_MAX_ROWS: z.coerce.number().int().min(1).max(100_000).default(1000),
  /** How long one query may run before PostgreSQL cancels it (a Temporal duration: '5s'). */
  SQL_STATEMENT_TIMEOUT: durationMilliseconds('5s'),
  /** How long `POST /sql/csv_to_db` waits for its import to finish before it answers 202 with the running import. */
  SQL_IMPORT_WAIT: durationMilliseconds('5s'),
  FETCH_ALLOWED_HOSTS: commaList(''),
  /** Remote A2A agents delegate_to_agent may call by name: `name=<agent card URL>` entries, comma-separated. */
  A2A_REMOTE_AGENTS: commaList('').transform((entries, context) => {
    const agents: Record<string, string> = {};
    for (const entry of entries) {
      const match = /^([A-Za-z0-9_-]{1,64})=(https?:\/\/\S+)$/.exec(entry);
      if (!match) {
        context.addIssue({ code: 'custom', message: `"${entry}" is not name=<http(s) card URL>` });
        return z.NEVER;
      }
      agents[match[1]!] = match[2]!;
    }
    return agents;
  }),
});

export type Settings = z.infer<typeof settingsSchema>;

export function readSettings(environment: Record<string, string | undefined> = process.env): Settings {
  const parsed = settingsSchema.safeParse(environment);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`invalid setting ${issue.path.join('.')}: ${issue.message}`);
  }
  return parsed.data;
}

/** What the built-in tools are configured with (activities/tools/tool.ts). */
export function toolSettingsOf(settings: Settings): ToolSettings {
  return {
    sandboxRoot: settings.SANDBOX_DIR,
    sandboxQuotaBytes: settings.SANDBOX_QUOTA_BYTES,
    enginesWarmAtStart: settings.ENGINES_WARM_AT_START,
    geocodingApiUrl: settings.GEOCODING_API_URL,
    weatherApiUrl: settings.WEATHER_API_URL,
    searxngUrl: settings.SEARXNG_URL,
    braveSearchApiKey: settings.BRAVE_SEARCH_API_KEY,
    braveSearchApiUrl: settings.BRAVE_SEARCH_API_URL,
    tavilyApiKey: settings.TAVILY_API_KEY,
    tavilyApiUrl: settings.TAVILY_API_URL,
    fetchAllowedHosts: settings.FETCH_ALLOWED_HOSTS,
    mailConfigured: !!settings.SMTP_URL,
    a2aRemoteAgents: settings.A2A_REMOTE_AGENTS,
    ...(googleWorkspaceConfigured(settings)
      ? {
          google: {
            // Where the tools send a user whose Google login is missing or revoked (they run without a request).
            loginUrl: settings.AGENT_PUBLIC_URL
              ? new URL('/auth/google', settings.AGENT_PUBLIC_URL).href
              : '/auth/google (on this agent service)',
          },
        }
      : {}),
  };
}

/** Google login and the workspace tools need the OAuth client and the key their tokens are encrypted with. */
export function googleWorkspaceConfigured(settings: Settings): boolean {
  return !!(settings.GOOGLE_CLIENT_ID && settings.GOOGLE_CLIENT_SECRET && settings.TOKEN_ENCRYPTION_KEY);
}

/**
 * The messaging apps this deployment answers on: each needs both of its credentials (LINE: channel secret and
 * access token; Telegram: bot token and webhook secret; Slack: bot token and signing secret). One without the other
 * is refused at start-up.
 */
export function messengerSettingsOf(settings: Settings): MessengerSettings {
  const line = settings.LINE_CHANNEL_SECRET || settings.LINE_CHANNEL_ACCESS_TOKEN;
  if (line && !(settings.LINE_CHANNEL_SECRET && settings.LINE_CHANNEL_ACCESS_TOKEN)) {
    throw new Error(
      'invalid setting LINE_CHANNEL_SECRET: LINE needs both LINE_CHANNEL_SECRET and LINE_CHANNEL_ACCESS_TOKEN',
    );
  }
  const telegram = settings.TELEGRAM_BOT_TOKEN || settings.TELEGRAM_WEBHOOK_SECRET;
  if (telegram && !(settings.TELEGRAM_BOT_TOKEN && settings.TELEGRAM_WEBHOOK_SECRET)) {
    throw new Error(
      'invalid setting TELEGRAM_WEBHOOK_SECRET: Telegram needs both TELEGRAM_BOT_TOKEN and TELEGRAM_WEBHOOK_SECRET',
    );
  }
  const slack = settings.SLACK_BOT_TOKEN || settings.SLACK_SIGNING_SECRET;
  if (slack && !(settings.SLACK_BOT_TOKEN && settings.SLACK_SIGNING_SECRET)) {
    throw new Error('invalid setting SLACK_SIGNING_SECRET: Slack needs both SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET');
  }
  return {
    ...(settings.SLACK_BOT_TOKEN && settings.SLACK_SIGNING_SECRET
      ? {
          slack: {
            botToken: settings.SLACK_BOT_TOKEN,
            signingSecret: settings.SLACK_SIGNING_SECRET,
            apiBaseUrl: settings.SLACK_API_BASE_URL,
          },
        }
      : {}),
    ...(settings.LINE_CHANNEL_SECRET && settings.LINE_CHANNEL_ACCESS_TOKEN
      ? {
          line: {
            channelSecret: settings.LINE_CHANNEL_SECRET,
            channelAccessToken: settings.LINE_CHANNEL_ACCESS_TOKEN,
            apiBaseUrl: settings.LINE_API_BASE_URL,
          },
        }
      : {}),
    ...(settings.TELEGRAM_BOT_TOKEN && settings.TELEGRAM_WEBHOOK_SECRET
      ? {
          telegram: {
            botToken: settings.TELEGRAM_BOT_TOKEN,
            webhookSecret: settings.TELEGRAM_WEBHOOK_SECRET,
            apiBaseUrl: settings.TELEGRAM_API_BASE_URL,
          },
        }
      : {}),
  };
}
