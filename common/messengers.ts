/**
 * The messaging apps (LINE, Telegram and Slack) as every room of the platform names them: the platforms, where an
 * answer goes (`MessengerTarget`: workflows, schedules and webhook runs carry it), and their settings (config/settings.ts
 * reads them). How each platform is called is in activities/messengers/.
 */
export type MessengerPlatform = 'line' | 'telegram' | 'slack';

export const messengerPlatforms: MessengerPlatform[] = ['line', 'telegram', 'slack'];

/** Where an answer goes: a LINE user, group or room id, a Telegram chat id, or a Slack channel (DM or channel) id. */
export interface MessengerTarget {
  platform: MessengerPlatform;
  to: string;
  /** Slack: the thread the answer goes in (the `ts` of the thread's first message); other platforms have none. */
  thread?: string;
}

export interface MessengerSettings {
  line?: { channelSecret: string; channelAccessToken: string; apiBaseUrl: string };
  telegram?: { botToken: string; webhookSecret: string; apiBaseUrl: string };
  /** A Slack app installed in one workspace: its bot token (xoxb-), its signing secret, and Web API base URL. */
  slack?: { botToken: string; signingSecret: string; apiBaseUrl: string };
}
