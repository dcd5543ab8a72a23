/**
 * Open-Meteo as `weather` calls it, under `/open-meteo/` (settings `geocodingApiUrl: ${sim}/open-meteo/geocoding`,
 * `weatherApiUrl: ${sim}/open-meteo/forecast`):
 *
 * - `GET /open-meteo/geocoding/v1/search?name=…&count=…` → `{results: [{id, name, latitude, longitude, elevation,
 *   country_code, country, admin1, timezone, population}], generationtime_ms}` for a few known places (Tokyo, Paris,
 *   Berlin, London, New York, Sydney; `Name, Country` narrows as the real API does). Another name answers without
 *   `results`, as the real API does.
 * - `GET /open-meteo/forecast/v1/forecast?latitude=…&longitude=…&current=…&temperature_unit=…&wind_speed_unit=…
 *   &precipitation_unit=…&timezone=auto` → `{latitude, longitude, timezone, current_units, current: {time, interval,
 *   …}}` with only the requested variables, computed from the coordinates (the same place always has the same
 *   weather); the time is now, in the place's zone. An unknown variable or unit is Open-Meteo's 400,
 *   `{error: true, reason}`.
 *
 * Faults as for the search engines: `/_status/<code>` or `/_delay/<ms>` in the configured URL.
 */
import type { ServerResponse } from 'node:http';
import { sendJson } from '../transport.ts';
import type { SimulatedService } from './index.ts';
import { takePathFault, waitOutDelay } from './search.ts';

interface KnownPlace {
  id: number;
  name: string;
  latitude: number;
  longitude: number;
  elevation: number;
  country_code: string;
  country: string;
  admin1: string;
  timezone: string;
  population: number;
}

const knownPlaces: KnownPlace[] = [
  {
    id: 1850147,
    name: 'Tokyo',
    latitude: 35.6895,
    longitude: 139.69171,
    elevation: 44,
    country_code: 'JP',
    country: 'Japan',
    admin1: 'Tokyo',
    timezone: 'Asia/Tokyo',
    population: 9733276,
  },
  {
    id: 2988507,
    name: 'Paris',
    latitude: 48.85341,
    longitude: 2.3488,
    elevation: 42,
    country_code: 'FR',
    country: 'France',
    admin1: 'Île-de-France',
    timezone: 'Europe/Paris',
    population: 2138551,
  },
  {
    id: 2950159,
    name: 'Berlin',
    latitude: 52.52437,
    longitude: 13.41053,
    elevation: 74,
    country_code: 'DE',
    country: 'Germany',
    admin1: 'Land Berlin',
    timezone: 'Europe/Berlin',
    population: 3426354,
  },
  {
    id: 2643743,
    name: 'London',
    latitude: 51.50853,
    longitude: -0.12574,
    elevation: 25,
    country_code: 'GB',
    country: 'United Kingdom',
    admin1: 'England',
    timezone: 'Europe/London',
    population: 8961989,
  },
  {
    id: 5128581,
    name: 'New York',
    latitude: 40.71427,
    longitude: -74.00597,
    elevation: 10,
    country_code: 'US',
    country: 'United States',
    admin1: 'New York',
    timezone: 'America/New_York',
    population: 8804190,
  },
  {
    id: 2147714,
    name: 'Sydney',
    latitude: -33.86785,
    longitude: 151.20732,
    elevation: 58,
    country_code: 'AU',
    country: 'Australia',
    admin1: 'New South Wales',
    timezone: 'Australia/Sydney',
    population: 4627345,
  },
];

const temperatureUnits: Record<string, { unit: string; convert: (celsius: number) => number }> = {
  celsius: { unit: '°C', convert: (celsius) => celsius },
  fahrenheit: { unit: '°F', convert: (celsius) => (celsius * 9) / 5 + 32 },
};
const windUnits: Record<string, { unit: string; convert: (kmh: number) => number }> = {
  kmh: { unit: 'km/h', convert: (kmh) => kmh },
  ms: { unit: 'm/s', convert: (kmh) => kmh / 3.6 },
  mph: { unit: 'mph', convert: (kmh) => kmh / 1.609344 },
  kn: { unit: 'kn', convert: (kmh) => kmh / 1.852 },
};
const precipitationUnits: Record<string, { unit: string; convert: (mm: number) => number }> = {
  mm: { unit: 'mm', convert: (mm) => mm },
  inch: { unit: 'inch', convert: (mm) => mm / 25.4 },
};

/** Conditions the simulated sky cycles through (WMO codes); the wet ones come with precipitation. */
const weatherCodes = [0, 1, 2, 3, 45, 51, 61, 63, 80, 95];
const wetCodes = new Set([51, 61, 63, 80, 95]);

export const openMeteoService: SimulatedService = {
  prefix: '/open-meteo/',
  async handle(request, response, url) {
    const fault = takePathFault(url.pathname);
    if (!(await waitOutDelay(fault, response))) return;
    if (fault.status !== undefined) return sendError(response, fault.status, `Simulated fault ${fault.status}`);
    if (request.method === 'GET' && fault.path === '/open-meteo/geocoding/v1/search') {
      return geocode(response, url.searchParams);
    }
    if (request.method === 'GET' && fault.path === '/open-meteo/forecast/v1/forecast') {
      return forecast(response, url.searchParams);
    }
    sendError(response, 404, `No route for ${request.method} ${fault.path}`);
  },
};

function geocode(response: ServerResponse, params: URLSearchParams): void {
  const [name = '', qualifier] = (params.get('name') ?? '').split(',').map((part) => part.trim().toLowerCase());
  const count = Math.min(Math.max(Number(params.get('count') ?? '10') || 10, 1), 100);
  const results = knownPlaces
    .filter((known) => known.name.toLowerCase() === name)
    .filter(
      (known) =>
        qualifier === undefined ||
        [known.country, known.country_code, known.admin1].some((value) => value.toLowerCase() === qualifier),
    )
    .slice(0, count);
  sendJson(response, 200, results.length === 0 ? { generationtime_ms: 0.1 } : { results, generationtime_ms: 0.1 });
}

function forecast(response: ServerResponse, params: URLSearchParams): void {
  const latitude = Number(params.get('latitude'));
  const longitude = Number(params.get('longitude'));
  if (!params.has('latitude') || !params.has('longitude') || !Number.isFinite(latitude + longitude)) {
    return sendError(response, 400, "Parameter 'latitude' and 'longitude' must be set to numbers");
  }
  const temperature = temperatureUnits[params.get('temperature_unit') ?? 'celsius'];
  const wind = windUnits[params.get('wind_speed_unit') ?? 'kmh'];
  const precipitation = precipitationUnits[params.get('precipitation_unit') ?? 'mm'];
  if (temperature === undefined || wind === undefined || precipitation === undefined) {
    return sendError(response, 400, 'Cannot initialize a unit from an invalid String value');
  }
  const weather = simulatedWeather(latitude, longitude);
  const values: Record<string, { value: number; unit: string }> = {
    temperature_2m: { value: round(temperature.convert(weather.temperature), 1), unit: temperature.unit },
    apparent_temperature: { value: round(temperature.convert(weather.apparent), 1), unit: temperature.unit },
    relative_humidity_2m: { value: weather.humidity, unit: '%' },
    wind_speed_10m: { value: round(wind.convert(weather.windKmh), 1), unit: wind.unit },
    precipitation: { value: round(precipitation.convert(weather.precipitationMm), 2), unit: precipitation.unit },
    weather_code: { value: weather.code, unit: 'wmo code' },
  };
  const requested = (params.get('current') ?? '').split(',').filter((variable) => variable !== '');
  const unknown = requested.find((variable) => values[variable] === undefined);
  if (unknown !== undefined) {
    return sendError(response, 400, `Cannot initialize ForecastVariable from invalid String value ${unknown}`);
  }
  const timezone = timezoneFor(params.get('timezone') ?? 'GMT', latitude, longitude);
  sendJson(response, 200, {
    latitude,
    longitude,
    generationtime_ms: 0.1,
    timezone,
    elevation: nearestKnownPlace(latitude, longitude)?.elevation ?? 0,
    current_units: {
      time: 'iso8601',
      interval: 'seconds',
      ...Object.fromEntries(requested.map((variable) => [variable, values[variable]?.unit])),
    },
    current: {
      time: localTime(timezone),
      interval: 900,
      ...Object.fromEntries(requested.map((variable) => [variable, values[variable]?.value])),
    },
  });
}

/** The weather at a point, in metric units: the same coordinates always give the same weather. */
function simulatedWeather(latitude: number, longitude: number) {
  const seed = Math.abs(Math.round(latitude * 100) * 31 + Math.round(longitude * 100) * 17);
  const temperature = round(28 - Math.abs(latitude) * 0.45 + (seed % 80) / 10, 1);
  const windKmh = round(3 + (seed % 250) / 10, 1);
  const code = weatherCodes[seed % weatherCodes.length] ?? 0;
  return {
    temperature,
    apparent: round(temperature - windKmh / 10, 1),
    humidity: 40 + (seed % 55),
    windKmh,
    code,
    precipitationMm: wetCodes.has(code) ? round(0.2 + (seed % 40) / 10, 1) : 0,
  };
}

function timezoneFor(requested: string, latitude: number, longitude: number): string {
  if (requested === 'auto') return nearestKnownPlace(latitude, longitude)?.timezone ?? 'GMT';
  try {
    new Intl.DateTimeFormat('en', { timeZone: requested });
    return requested;
  } catch {
    return 'GMT';
  }
}

function nearestKnownPlace(latitude: number, longitude: number): KnownPlace | undefined {
  return knownPlaces.find(
    (known) => Math.abs(known.latitude - latitude) < 0.5 && Math.abs(known.longitude - longitude) < 0.5,
  );
}

/** Now, rounded down to the quarter hour as Open-Meteo's current values are, as local ISO 8601 without offset. */
function localTime(timezone: string): string {
  const quarter = 15 * 60 * 1000;
  const now = new Date(Math.floor(Date.now() / quarter) * quarter);
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone: timezone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    })
      .formatToParts(now)
      .map((part) => [part.type, part.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}`;
}

function sendError(response: ServerResponse, status: number, reason: string): void {
  sendJson(response, status, { error: true, reason });
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
