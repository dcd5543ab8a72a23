/**
 * `weather` end to end through `runTool` against the simulator's Open-Meteo (geocoding, then forecast): the answer's
 * shape and units, unknown places, bad arguments, and how upstream failures and slowness reach the caller.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runTool } from '../../../activities/tools/runtime.ts';
import { ToolError } from '../../../activities/tools/tool.ts';
import type { ToolSettings } from '../../../config/tool-settings.ts';
import { weatherTool } from '../../../activities/tools/weather.ts';
import { startSimulator, type RunningSimulator } from '../../../simulator/server.ts';
import { testToolSettings } from '../../helpers/tool-settings.ts';

let simulator: RunningSimulator;
beforeAll(async () => {
  simulator = await startSimulator();
});
afterAll(async () => {
  await simulator.close();
});

function settings(overrides: Partial<ToolSettings> = {}): ToolSettings {
  return testToolSettings(overrides, simulator.url);
}

function weather(args: unknown, overrides: Partial<ToolSettings> = {}, tool = weatherTool) {
  const rawArguments = typeof args === 'string' ? args : JSON.stringify(args);
  return runTool(tool, rawArguments, { conversationId: 'conversation-1', settings: settings(overrides) });
}

async function report(args: unknown): Promise<Record<string, string>> {
  const outcome = await weather(args);
  expect(outcome.ok).toBe(true);
  return JSON.parse(outcome.content) as Record<string, string>;
}

function numberIn(text: string | undefined): number {
  return Number.parseFloat(text ?? 'NaN');
}

describe('weather', () => {
  it('reports the current weather of a known place with its units and conditions in words', async () => {
    const tokyo = await report({ location: 'Tokyo' });
    expect(tokyo).toMatchObject({ place: 'Tokyo', country: 'Japan', timezone: 'Asia/Tokyo' });
    expect(tokyo.time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/);
    expect(tokyo.temperature).toMatch(/^-?\d+(\.\d+)?°C$/);
    expect(tokyo.feels_like).toMatch(/^-?\d+(\.\d+)?°C$/);
    expect(tokyo.humidity).toMatch(/^\d+%$/);
    expect(tokyo.wind).toMatch(/^\d+(\.\d+)? km\/h$/);
    expect(tokyo.precipitation).toMatch(/^\d+(\.\d+)? mm$/);
    expect(tokyo.conditions).toMatch(/^[a-z ]+$/);

    // The simulated weather is a function of the coordinates: the same place reads the same.
    const again = await report({ location: 'tokyo' });
    expect({ ...again, time: tokyo.time }).toEqual(tokyo);
  });

  it('gives the region beside a place name and narrows by "Name, Country"', async () => {
    expect(await report({ location: 'Paris, France' })).toMatchObject({
      place: 'Paris, Île-de-France',
      country: 'France',
      timezone: 'Europe/Paris',
    });
    const elsewhere = await weather({ location: 'Paris, Japan' });
    expect(elsewhere).toEqual({ ok: false, content: expect.stringContaining('no place named "Paris, Japan"') });
  });

  it('converts to Fahrenheit, mph and inches when asked', async () => {
    const celsius = await report({ location: 'Berlin', unit: 'celsius' });
    const fahrenheit = await report({ location: 'Berlin', unit: 'fahrenheit' });
    expect(fahrenheit.temperature).toMatch(/°F$/);
    expect(numberIn(fahrenheit.temperature)).toBeCloseTo((numberIn(celsius.temperature) * 9) / 5 + 32, 0);
    expect(fahrenheit.wind).toMatch(/ mph$/);
    expect(numberIn(fahrenheit.wind)).toBeCloseTo(numberIn(celsius.wind) / 1.609344, 0);
    expect(fahrenheit.precipitation).toMatch(/ inch$/);
    expect(fahrenheit.conditions).toBe(celsius.conditions);
  });

  it('tells the model when no place has the name', async () => {
    const outcome = await weather({ location: 'Atlantis' });
    expect(outcome.ok).toBe(false);
    expect(outcome.content).toContain('no place named "Atlantis"');
  });

  it('refuses bad arguments before calling anything', async () => {
    const missing = await weather({});
    expect(missing).toEqual({ ok: false, content: expect.stringContaining('invalid arguments (location:') });
    const badUnit = await weather({ location: 'Tokyo', unit: 'kelvin' });
    expect(badUnit).toEqual({ ok: false, content: expect.stringContaining('invalid arguments (unit:') });
    const notJson = await weather('{"location": ');
    expect(notJson).toEqual({ ok: false, content: 'weather: the arguments are not valid JSON' });
  });

  it('makes an upstream 5xx a retryable error and a 4xx a message with its reason', async () => {
    const failing = weather(
      { location: 'Tokyo' },
      { weatherApiUrl: `${simulator.url}/open-meteo/forecast/_status/503` },
    );
    await expect(failing).rejects.toThrow(ToolError);
    await expect(failing).rejects.toMatchObject({ retryable: true, message: expect.stringContaining('HTTP 503') });

    const refused = await weather(
      { location: 'Tokyo' },
      { geocodingApiUrl: `${simulator.url}/open-meteo/geocoding/_status/400` },
    );
    expect(refused).toEqual({
      ok: false,
      content: 'weather: the geocoding service refused the request (HTTP 400): Simulated fault 400',
    });
  });

  it('gives up on a slow upstream at the tool’s timeout, retryably', async () => {
    const impatient = { ...weatherTool, timeoutMs: 200 };
    const started = Date.now();
    const slow = weather(
      { location: 'Tokyo' },
      { geocodingApiUrl: `${simulator.url}/open-meteo/geocoding/_delay/5000` },
      impatient,
    );
    await expect(slow).rejects.toMatchObject({ name: 'ToolError', retryable: true });
    await expect(slow).rejects.toThrow('weather did not finish within 0.2 s');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('makes an unreachable service a retryable error', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const unreachable = weather({ location: 'Tokyo' }, { geocodingApiUrl: `http://127.0.0.1:${port}` });
    await expect(unreachable).rejects.toMatchObject({
      retryable: true,
      message: 'cannot reach the geocoding service',
    });
  });

  it('is configured when both service URLs are set', () => {
    expect(weatherTool.configured(settings())).toBe(true);
    expect(weatherTool.configured(settings({ weatherApiUrl: '' }))).toBe(false);
    expect(weatherTool.configured(settings({ geocodingApiUrl: ' ' }))).toBe(false);
  });
});

describe('the simulated Open-Meteo', () => {
  it('answers an unknown place without results and refuses an unknown variable, as the real API does', async () => {
    const nowhere = await fetch(`${simulator.url}/open-meteo/geocoding/v1/search?name=Atlantis&count=1`);
    expect(await nowhere.json()).toEqual({ generationtime_ms: expect.any(Number) });

    const badVariable = await fetch(
      `${simulator.url}/open-meteo/forecast/v1/forecast?latitude=1&longitude=2&current=temperature_2m,sunshine`,
    );
    expect(badVariable.status).toBe(400);
    expect(await badVariable.json()).toEqual({ error: true, reason: expect.stringContaining('sunshine') });
  });
});
