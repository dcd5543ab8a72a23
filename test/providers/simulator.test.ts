/** The simulator's own contract: authentication and error shapes per protocol, and its control API. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import {
  simulatorControl,
  startSimulator,
  type RunningSimulator,
  type SimulatorControl,
} from '../../simulator/server.ts';

let simulator: RunningSimulator;
let control: SimulatorControl;
beforeAll(async () => {
  simulator = await startSimulator();
  control = simulatorControl(simulator.url);
});
beforeEach(async () => {
  await control.clearFaults();
  await control.resetRequests();
});
afterAll(async () => {
  await simulator.close();
});

function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${simulator.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

const openAIBody = { model: 'gpt-sim', messages: [{ role: 'user', content: 'hi' }] };
const anthropicBody = { model: 'claude-sim', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
const geminiBody = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };

describe('simulator authentication and validation', () => {
  it('answers a missing key with 401 in each protocol’s error shape', async () => {
    const openAI = await post('/v1/chat/completions', openAIBody);
    expect(openAI.status).toBe(401);
    expect(await openAI.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'invalid_api_key' } });

    const anthropic = await post('/v1/messages', anthropicBody, { 'anthropic-version': '2023-06-01' });
    expect(anthropic.status).toBe(401);
    expect(await anthropic.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });

    const gemini = await post('/v1beta/models/gemini-sim:generateContent', geminiBody);
    expect(gemini.status).toBe(401);
    expect(await gemini.json()).toMatchObject({ error: { code: 401, status: 'UNAUTHENTICATED' } });
  });

  it('rejects what the real APIs reject', async () => {
    const noMaxTokens = await post(
      '/v1/messages',
      { model: 'claude-sim', messages: [{ role: 'user', content: 'hi' }] },
      { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
    );
    expect(noMaxTokens.status).toBe(400);
    expect(await noMaxTokens.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });

    const noVersion = await post('/v1/messages', anthropicBody, { 'x-api-key': 'k' });
    expect(noVersion.status).toBe(400);

    const unknownField = await post(
      '/v1beta/models/gemini-sim:generateContent',
      { ...geminiBody, model: 'x' },
      {
        'x-goog-api-key': 'k',
      },
    );
    expect(unknownField.status).toBe(400);
    expect(await unknownField.json()).toMatchObject({ error: { status: 'INVALID_ARGUMENT' } });

    const choiceWithoutTools = await post(
      '/v1/chat/completions',
      { ...openAIBody, tool_choice: 'auto' },
      { authorization: 'Bearer k' },
    );
    expect(choiceWithoutTools.status).toBe(400);
  });

  it('refuses what Anthropic refuses with thinking on, and takes a tool loop that sends its thinking back', async () => {
    const headers = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };
    const thinking = { type: 'enabled', budget_tokens: 1024 };
    const status = async (body: Record<string, unknown>) =>
      (await post('/v1/messages', { ...anthropicBody, max_tokens: 2048, thinking, ...body }, headers)).status;
    expect(await status({ thinking: { type: 'enabled', budget_tokens: 512 } })).toBe(400);
    expect(await status({ max_tokens: 1024 })).toBe(400);
    expect(await status({ temperature: 0.5 })).toBe(400);
    const tools = [{ name: 'get_time', input_schema: { type: 'object' } }];
    expect(await status({ tools, tool_choice: { type: 'any' } })).toBe(400);

    const toolUse = { type: 'tool_use', id: 'toolu_1', name: 'get_time', input: {} };
    const loop = (assistant: unknown[]) => [
      { role: 'user', content: 'time?' },
      { role: 'assistant', content: assistant },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'noon' }] },
    ];
    expect(await status({ tools, messages: loop([toolUse]) })).toBe(400);
    const signed = { type: 'thinking', thinking: 'Ask the clock.', signature: 'c2ln' };
    expect(await status({ tools, messages: loop([signed, toolUse]) })).toBe(200);
  });

  it('accepts the Gemini key as a query parameter and streams a JSON array without alt=sse', async () => {
    const response = await post('/v1beta/models/gemini-sim:streamGenerateContent?key=k', geminiBody);
    expect(response.status).toBe(200);
    const chunks = (await response.json()) as Array<{
      candidates: Array<{ content: { parts: Array<{ text: string }> } }>;
    }>;
    expect(chunks.map((chunk) => chunk.candidates[0]?.content.parts[0]?.text).join('')).toBe(
      'Simulated reply from gemini-sim to: hi',
    );
  });
});

describe('simulator control API', () => {
  it('counts requests per model and keeps the last one', async () => {
    await post('/v1/chat/completions', openAIBody, { authorization: 'Bearer k' });
    await post('/v1/chat/completions', openAIBody, { authorization: 'Bearer k' });
    await post('/v1beta/models/gemini-sim:generateContent', geminiBody, { 'x-goog-api-key': 'k' });
    const summary = await control.requests();
    expect(summary).toMatchObject({ total: 3, by_model: { 'gpt-sim': 2, 'gemini-sim': 1 } });
    expect(summary.last).toMatchObject({ protocol: 'gemini', model: 'gemini-sim', body: geminiBody });

    await control.resetRequests();
    expect(await control.requests()).toEqual({ total: 0, by_model: {}, last: null });
  });

  it('matches faults by protocol and model, in order, and clears them', async () => {
    await control.addFault({ match: { protocol: 'anthropic' }, fault: { status: 529 } });
    const { id } = await control.addFault({
      match: { model: 'gpt-sim' },
      times: 2,
      fault: { status: 503, retry_after: 4 },
    });
    expect(id).toMatch(/\S/);

    const headers = { authorization: 'Bearer k' };
    const first = await post('/v1/chat/completions', openAIBody, headers);
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('4');
    expect((await post('/v1/chat/completions', openAIBody, headers)).status).toBe(503);
    expect((await post('/v1/chat/completions', openAIBody, headers)).status).toBe(200);

    const anthropicHeaders = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };
    const overloaded = await post('/v1/messages', anthropicBody, anthropicHeaders);
    expect(overloaded.status).toBe(529);
    expect(await overloaded.json()).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });

    await control.clearFaults();
    expect((await post('/v1/messages', anthropicBody, anthropicHeaders)).status).toBe(200);
  });

  it('rejects an invalid fault rule', async () => {
    const response = await fetch(`${simulator.url}/_simulator/faults`, {
      method: 'POST',
      body: JSON.stringify({ fault: { status: 'soon' } }),
    });
    expect(response.status).toBe(400);
  });
});
