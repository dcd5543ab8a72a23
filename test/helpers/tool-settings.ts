/**
 * Built-in tool settings for tests: no sandbox, no search engine, and every service URL on a closed port unless a
 * simulator is given (then its Open-Meteo, Brave and Tavily, as scripts/lib/simulated-providers.ts points them).
 * Each test overrides what it is about.
 */
import type { ToolSettings } from '../../config/tool-settings.ts';

const nowhere = 'http://127.0.0.1:9';

export function testToolSettings(overrides: Partial<ToolSettings> = {}, simulatorUrl?: string): ToolSettings {
  return {
    sandboxRoot: '/nonexistent',
    sandboxQuotaBytes: 0,
    geocodingApiUrl: simulatorUrl ? `${simulatorUrl}/open-meteo/geocoding` : `${nowhere}/geocoding`,
    weatherApiUrl: simulatorUrl ? `${simulatorUrl}/open-meteo/forecast` : `${nowhere}/forecast`,
    braveSearchApiUrl: simulatorUrl ? `${simulatorUrl}/brave` : `${nowhere}/brave`,
    tavilyApiUrl: simulatorUrl ? `${simulatorUrl}/tavily` : `${nowhere}/tavily`,
    fetchAllowedHosts: [],
    ...overrides,
  };
}
