/**
 * `weather`: the current weather for a place name, from Open-Meteo (no key) or any server speaking its API. Two calls:
 * the geocoding API, `GET {GEOCODING_API_URL}/v1/search?name=…&count=1&language=en&format=json` →
 * `{results: [{name, latitude, longitude, country, admin1, timezone, …}]}` (no `results` at all when nothing
 * matches), then the forecast API, `GET {WEATHER_API_URL}/v1/forecast?latitude=…&longitude=…&current=…&timezone=auto`
 * → `{timezone, current: {time, temperature_2m, …}, current_units: {temperature_2m: '°C', …}}`. Errors are
 * `{error: true, reason}`. The model gets one compact object with the units written out and the WMO weather code
 * in words.
 */
import { z } from 'zod';
import { endpoint, requestJson } from './search/engine.ts';
import { defineTool, ToolError } from './tool.ts';

const currentVariables = [
  'temperature_2m',
  'relative_humidity_2m',
  'apparent_temperature',
  'precipitation',
  'weather_code',
  'wind_speed_10m',
] as const;

const geocodedPlace = z.object({
  name: z.string(),
  latitude: z.number(),
  longitude: z.number(),
  country: z.string().nullish(),
  admin1: z.string().nullish(),
  timezone: z.string().nullish(),
});
type GeocodedPlace = z.infer<typeof geocodedPlace>;

const geocodingAnswer = z.object({ results: z.array(geocodedPlace).nullish() });

const forecastAnswer = z.object({
  timezone: z.string().nullish(),
  current: z.object({
    time: z.string(),
    temperature_2m: z.number(),
    relative_humidity_2m: z.number().nullish(),
    apparent_temperature: z.number().nullish(),
    precipitation: z.number().nullish(),
    weather_code: z.number().int().nullish(),
    wind_speed_10m: z.number().nullish(),
  }),
  current_units: z.record(z.string(), z.string()).nullish(),
});

const openMeteoError = z.object({ reason: z.string() });

/** WMO weather interpretation codes, as Open-Meteo documents them. */
const conditions: Record<number, string> = {
  0: 'clear sky',
  1: 'mainly clear',
  2: 'partly cloudy',
  3: 'overcast',
  45: 'fog',
  48: 'depositing rime fog',
  51: 'light drizzle',
  53: 'moderate drizzle',
  55: 'dense drizzle',
  56: 'light freezing drizzle',
  57: 'dense freezing drizzle',
  61: 'slight rain',
  63: 'moderate rain',
  65: 'heavy rain',
  66: 'light freezing rain',
  67: 'heavy freezing rain',
  71: 'slight snowfall',
  73: 'moderate snowfall',
  75: 'heavy snowfall',
  77: 'snow grains',
  80: 'slight rain showers',
  81: 'moderate rain showers',
  82: 'violent rain showers',
  85: 'slight snow showers',
  86: 'heavy snow showers',
  95: 'thunderstorm',
  96: 'thunderstorm with slight hail',
  99: 'thunderstorm with heavy hail',
};

export const weatherTool = defineTool({
  name: 'weather',
  description:
    'Current weather for a place: temperature, feels-like temperature, humidity, wind, precipitation and ' +
    'conditions, with the local time of the observation.',
  input: z.object({
    location: z
      .string()
      .trim()
      .min(2)
      .max(200)
      .describe('A place name, optionally followed by a comma and its country or region, e.g. "Paris, France"'),
    unit: z
      .enum(['celsius', 'fahrenheit'])
      .optional()
      .describe('Temperature unit (default celsius); fahrenheit also gives wind in mph and precipitation in inches'),
  }),
  timeoutMs: 10_000,
  retry: { maximumAttempts: 3, initialIntervalMs: 1_000 },
  maxOutputChars: 1_000,
  configured: (settings) => settings.geocodingApiUrl.trim() !== '' && settings.weatherApiUrl.trim() !== '',
  async run({ location, unit = 'celsius' }, { settings, signal }) {
    const place = await geocode(settings.geocodingApiUrl, location, signal);
    const url = endpoint(settings.weatherApiUrl, '/v1/forecast');
    url.searchParams.set('latitude', String(place.latitude));
    url.searchParams.set('longitude', String(place.longitude));
    url.searchParams.set('current', currentVariables.join(','));
    url.searchParams.set('temperature_unit', unit);
    if (unit === 'fahrenheit') {
      url.searchParams.set('wind_speed_unit', 'mph');
      url.searchParams.set('precipitation_unit', 'inch');
    }
    url.searchParams.set('timezone', 'auto');
    const forecast = await requestJson({ ...openMeteo('the weather service'), url, signal, schema: forecastAnswer });
    const { current } = forecast;
    const units = forecast.current_units ?? {};
    const measure = (value: number | null | undefined, variable: (typeof currentVariables)[number]) =>
      value === null || value === undefined ? undefined : withUnit(value, units[variable] ?? '');
    return {
      place: place.admin1 && place.admin1 !== place.name ? `${place.name}, ${place.admin1}` : place.name,
      country: place.country ?? undefined,
      time: current.time,
      timezone: forecast.timezone ?? place.timezone ?? undefined,
      temperature: measure(current.temperature_2m, 'temperature_2m'),
      feels_like: measure(current.apparent_temperature, 'apparent_temperature'),
      humidity: measure(current.relative_humidity_2m, 'relative_humidity_2m'),
      wind: measure(current.wind_speed_10m, 'wind_speed_10m'),
      precipitation: measure(current.precipitation, 'precipitation'),
      conditions: describeWeatherCode(current.weather_code),
    };
  },
});

async function geocode(baseUrl: string, location: string, signal: AbortSignal): Promise<GeocodedPlace> {
  const url = endpoint(baseUrl, '/v1/search');
  url.searchParams.set('name', location);
  url.searchParams.set('count', '1');
  url.searchParams.set('language', 'en');
  url.searchParams.set('format', 'json');
  const answer = await requestJson({ ...openMeteo('the geocoding service'), url, signal, schema: geocodingAnswer });
  const place = answer.results?.[0];
  if (place === undefined) {
    throw new ToolError(`no place named "${location}" was found; try the city name alone, or add its country`);
  }
  return place;
}

/** What the two Open-Meteo APIs share: how a refusal reads. */
function openMeteo(service: string) {
  return { service, errorDetail: (_: number, body: unknown) => openMeteoError.safeParse(body).data?.reason };
}

function withUnit(value: number, unit: string): string {
  if (unit === '') return String(value);
  return unit === '%' || unit.startsWith('°') ? `${value}${unit}` : `${value} ${unit}`;
}

function describeWeatherCode(code: number | null | undefined): string | undefined {
  if (code === null || code === undefined) return undefined;
  return conditions[code] ?? `unknown (WMO code ${code})`;
}
