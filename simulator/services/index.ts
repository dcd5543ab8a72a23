/**
 * The services built-in tools call, played by the simulator beside the model APIs (pages to fetch, a search engine,
 * a weather API), the messaging platforms (LINE, Telegram, Slack), GitHub (inbound webhooks and comments) and Google
 * (sign-in and the workspace APIs: ./google/): each handles the paths under its prefix. The server dispatches here
 * before the model routes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { githubService } from './github.ts';
import { googleService } from './google/index.ts';
import { lineControlService, lineService, telegramService } from './messengers.ts';
import { pagesService } from './pages.ts';
import { braveService, searxngService, tavilyService } from './search.ts';
import { slackService } from './slack.ts';
import { openMeteoService } from './weather.ts';

export interface SimulatedService {
  /** Path prefix, e.g. `/pages/`. */
  prefix: string;
  handle(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void>;
}

export const simulatedServices: SimulatedService[] = [
  pagesService,
  searxngService,
  braveService,
  tavilyService,
  openMeteoService,
  lineService,
  lineControlService,
  telegramService,
  slackService,
  githubService,
  googleService,
];
