/** Every provider pointed at the simulator: what `npm start` does when no provider key is set. */
export function simulatedProviders(simulatorUrl: string): Record<string, string> {
  return {
    OPENAI_API_KEY: 'simulator',
    OPENAI_BASE_URL: `${simulatorUrl}/v1`,
    DEEPSEEK_API_KEY: 'simulator',
    DEEPSEEK_BASE_URL: `${simulatorUrl}/v1`,
    GROQ_API_KEY: 'simulator',
    GROQ_BASE_URL: `${simulatorUrl}/v1`,
    DASHSCOPE_API_KEY: 'simulator',
    DASHSCOPE_BASE_URL: `${simulatorUrl}/v1`,
    ANTHROPIC_API_KEY: 'simulator',
    ANTHROPIC_BASE_URL: simulatorUrl,
    GEMINI_API_KEY: 'simulator',
    GEMINI_BASE_URL: simulatorUrl,
  };
}

/**
 * The services built-in tools call, pointed at the simulator where the environment does not name them: weather
 * (Open-Meteo shaped), web search (SearXNG shaped) and the simulator's pages, which `web_fetch` may then reach
 * although they are on loopback. Real pages stay reachable as ever.
 */
export function simulatedToolServices(
  simulatorUrl: string,
  environment: Record<string, string | undefined>,
): Record<string, string> {
  const { host } = new URL(simulatorUrl);
  const configured = (name: string) => !!environment[name];
  const searchConfigured = ['SEARXNG_URL', 'BRAVE_SEARCH_API_KEY', 'TAVILY_API_KEY'].some(configured);
  return {
    ...(configured('GEOCODING_API_URL') ? {} : { GEOCODING_API_URL: `${simulatorUrl}/open-meteo/geocoding` }),
    ...(configured('WEATHER_API_URL') ? {} : { WEATHER_API_URL: `${simulatorUrl}/open-meteo/forecast` }),
    ...(searchConfigured ? {} : { SEARXNG_URL: `${simulatorUrl}/searxng` }),
    FETCH_ALLOWED_HOSTS: [environment.FETCH_ALLOWED_HOSTS, host].filter(Boolean).join(','),
    ...simulatedMessengers(simulatorUrl, environment),
    ...simulatedMediaProviders(simulatorUrl, environment),
    // Where the github_comment tool posts (simulator/services/github.ts), unless the deployment names GitHub's.
    ...(configured('GITHUB_API_BASE_URL') ? {} : { GITHUB_API_BASE_URL: `${simulatorUrl}/github` }),
  };
}

/**
 * The hosted media providers played by the simulator (simulator/services/media.ts), each unless the deployment set
 * its key: ElevenLabs and Replicate. OpenAI's speech, images and transcription follow OPENAI_BASE_URL, which
 * `simulatedProviders` already points at the simulator.
 */
export function simulatedMediaProviders(
  simulatorUrl: string,
  environment: Record<string, string | undefined>,
): Record<string, string> {
  return {
    ...(environment.ELEVENLABS_API_KEY ? {} : { ELEVENLABS_API_KEY: 'simulator', ELEVENLABS_BASE_URL: simulatorUrl }),
    ...(environment.REPLICATE_API_TOKEN ? {} : { REPLICATE_API_TOKEN: 'simulator', REPLICATE_BASE_URL: simulatorUrl }),
  };
}

/** The credentials the simulated messaging platforms take (any bearer token for LINE; a well-formed bot token). */
export const simulatedMessengerCredentials = {
  LINE_CHANNEL_SECRET: 'sim-line-channel-secret',
  LINE_CHANNEL_ACCESS_TOKEN: 'sim-line-access-token',
  TELEGRAM_BOT_TOKEN: '123456789:SIMsimSIMsimSIMsimSIMsimSIMsimSIMsi',
  TELEGRAM_WEBHOOK_SECRET: 'sim-telegram-webhook-secret',
  SLACK_BOT_TOKEN: 'xoxb-simulated-bot-token',
  SLACK_SIGNING_SECRET: 'sim-slack-signing-secret',
} as const;

/**
 * LINE, Telegram and Slack played by the simulator, each unless the deployment configured the real one: webhooks
 * (Slack's events) are then delivered by the simulator's `/line/_deliver`, `/telegram/_deliver` and `/slack/_deliver`
 * (simulator/services/messengers.ts, slack.ts), and answers land in its `/_sent` logs.
 */
export function simulatedMessengers(
  simulatorUrl: string,
  environment: Record<string, string | undefined>,
): Record<string, string> {
  const lineConfigured = !!(environment.LINE_CHANNEL_SECRET || environment.LINE_CHANNEL_ACCESS_TOKEN);
  const telegramConfigured = !!(environment.TELEGRAM_BOT_TOKEN || environment.TELEGRAM_WEBHOOK_SECRET);
  const slackConfigured = !!(environment.SLACK_BOT_TOKEN || environment.SLACK_SIGNING_SECRET);
  const credentials = simulatedMessengerCredentials;
  return {
    ...(lineConfigured
      ? {}
      : {
          LINE_CHANNEL_SECRET: credentials.LINE_CHANNEL_SECRET,
          LINE_CHANNEL_ACCESS_TOKEN: credentials.LINE_CHANNEL_ACCESS_TOKEN,
          LINE_API_BASE_URL: simulatorUrl,
        }),
    ...(telegramConfigured
      ? {}
      : {
          TELEGRAM_BOT_TOKEN: credentials.TELEGRAM_BOT_TOKEN,
          TELEGRAM_WEBHOOK_SECRET: credentials.TELEGRAM_WEBHOOK_SECRET,
          TELEGRAM_API_BASE_URL: `${simulatorUrl}/telegram`,
        }),
    ...(slackConfigured
      ? {}
      : {
          SLACK_BOT_TOKEN: credentials.SLACK_BOT_TOKEN,
          SLACK_SIGNING_SECRET: credentials.SLACK_SIGNING_SECRET,
          SLACK_API_BASE_URL: `${simulatorUrl}/slack/api`,
        }),
  };
}

/**
 * Google played by the simulator (simulator/services/google/), unless the deployment set GOOGLE_CLIENT_ID: the
 * simulator is then the OpenID provider (its consent page signs in any address) and serves the workspace APIs, so the
 * Google login and the workspace agents can be tried without a Google Cloud project. Its sign-in page is on the
 * simulator's loopback address: only a browser on this machine can reach it.
 */
export function simulatedGoogle(
  simulatorUrl: string,
  environment: Record<string, string | undefined>,
): Record<string, string> {
  if (environment.GOOGLE_CLIENT_ID) return {};
  return {
    GOOGLE_CLIENT_ID: 'tessera-simulated.apps.googleusercontent.com',
    GOOGLE_CLIENT_SECRET: 'simulated-client-secret',
    GOOGLE_ISSUER: `${simulatorUrl}/google`,
    GOOGLE_API_BASE_URL: `${simulatorUrl}/google`,
  };
}
