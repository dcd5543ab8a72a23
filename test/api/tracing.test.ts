/**
 * Traces that leave the platform (docs/operations.md, "Traces (OpenTelemetry)"): with OTEL_EXPORTER_OTLP_ENDPOINT
 * naming a collector, one completion that fails over is one trace, received here over OTLP/HTTP (JSON) by a loopback
 * collector: the API's request span, the workflow start, the workflow and its local activities, and a span per
 * provider call in the GenAI semantic conventions, the failed attempt in error; the caller's account and key id on
 * them, and no prompt text anywhere unless asked for.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { waitFor } from '../helpers/wait.ts';

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: OtlpValue }>;
  status?: { code?: number; message?: string };
}
interface ExportRequest {
  resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: OtlpSpan[] }> }>;
}

/** A received span with its attributes as plain values. */
interface Received extends OtlpSpan {
  attrs: Record<string, unknown>;
}

// OTLP's span kinds and status codes.
const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;

const plain = (value: OtlpValue): unknown =>
  value.arrayValue
    ? (value.arrayValue.values ?? []).map(plain)
    : (value.stringValue ??
      (value.intValue !== undefined ? Number(value.intValue) : undefined) ??
      value.doubleValue ??
      value.boolValue);

const received: Received[] = [];
const bodies: string[] = [];
let collector: Server;
let platform: TestPlatform;

beforeAll(async () => {
  collector = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      if (request.method === 'POST' && request.url === '/v1/traces') {
        bodies.push(text);
        const body = JSON.parse(text) as ExportRequest;
        for (const resource of body.resourceSpans ?? [])
          for (const scope of resource.scopeSpans ?? [])
            for (const span of scope.spans ?? [])
              received.push({
                ...span,
                attrs: Object.fromEntries((span.attributes ?? []).map(({ key, value }) => [key, plain(value)])),
              });
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  const { port } = collector.address() as AddressInfo;
  platform = await startTestPlatform({
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
    OTEL_SERVICE_NAME: 'tessera-test',
    // Batches leave every 100 ms instead of every 5 s: the test waits for what it needs, not for a timer.
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  // The run's prebuilt workflow bundle has no tracing interceptors: this platform bundles its own (a few seconds).
}, 180_000);

afterAll(async () => {
  await platform?.close();
  await new Promise((resolve) => collector?.close(resolve));
});

it('exports one trace per completion, from the request through the workflow to each provider call', async () => {
  const { key, id: keyId, user_id: userId } = await platform.createKey();
  // The first candidate's provider fails once: the workflow fails over to the next model of the tier.
  await platform.simulator.addFault({ match: { model: 'gpt-4o-mini-2024-07-18' }, times: 1, fault: { status: 500 } });
  const secret = 'the-prompt-text-must-not-leave-7f3a';
  const completion = await platform
    .openai(key)
    .chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `Say hi ${secret}` }] });
  expect(completion.model).not.toBe('gpt-4o-mini');

  const spansOf = (traceId: string) => received.filter((span) => span.traceId === traceId);
  // The request's span ends once its answer has gone out; the workflow's once its run has ended.
  const server = await waitFor('the request span', async () =>
    received.find(
      (span) =>
        span.kind === SERVER &&
        span.attrs['http.route'] === '/v1/chat/completions' &&
        span.attrs['tessera.account'] === userId,
    ),
  );
  const trace = await waitFor('the workflow and both provider calls', async () => {
    const spans = spansOf(server.traceId);
    const done =
      spans.some((span) => span.name === 'RunWorkflow:chatCompletion') &&
      spans.filter((span) => span.name.startsWith('chat ') && span.attrs['error.type'] !== 'aborted').length === 2;
    return done ? spans : null;
  });
  const named = (name: string) => trace.filter((span) => span.name === name);

  // The request: a SERVER span, with its caller.
  expect(server.name).toBe('POST /v1/chat/completions');
  expect(server.attrs).toMatchObject({
    'http.request.method': 'POST',
    'http.response.status_code': 200,
    'tessera.account': userId,
    'tessera.key_id': keyId,
  });
  expect(server.parentSpanId || undefined).toBeUndefined();

  // The workflow start is the request's child; the workflow run the start's; the activities the workflow's.
  const [start] = named('StartWorkflow:chatCompletion');
  expect(start?.parentSpanId).toBe(server.spanId);
  const [run] = named('RunWorkflow:chatCompletion');
  expect(run?.parentSpanId).toBe(start?.spanId);
  const scheduled = named('StartActivity:callProvider');
  const executed = named('RunActivity:callProvider');
  expect(scheduled).toHaveLength(2);
  expect(executed).toHaveLength(2);
  for (const span of scheduled) expect(span.parentSpanId).toBe(run?.spanId);
  for (const span of executed) expect(scheduled.map((parent) => parent.spanId)).toContain(span.parentSpanId);

  // The attempts: one CLIENT span per provider call, in the GenAI conventions.
  // (Were the eager start declined on a busy machine, the API's speculative attempt 1 would be aborted unadopted and
  // the workflow's activity would make it: that aborted call is not one of the attempts.)
  const calls = trace
    .filter((span) => span.name.startsWith('chat ') && span.attrs['error.type'] !== 'aborted')
    .sort((a, b) => Number(a.attrs['tessera.attempt']) - Number(b.attrs['tessera.attempt']));
  expect(calls.map((span) => span.kind)).toEqual([CLIENT, CLIENT]);
  const [failed, served] = calls as [Received, Received];
  expect(failed.name).toBe('chat gpt-4o-mini-2024-07-18');
  expect(failed.status?.code).toBe(ERROR);
  expect(failed.attrs).toMatchObject({
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'openai',
    'gen_ai.request.model': 'gpt-4o-mini-2024-07-18',
    'error.type': 'http',
    'tessera.upstream_status': 500,
    'tessera.attempt': 1,
    'tessera.failover': false,
    'tessera.outcome': 'failed',
    'tessera.model': 'gpt-4o-mini',
    'tessera.account': userId,
    'tessera.key_id': keyId,
  });
  expect(served.status?.code ?? 0).not.toBe(ERROR);
  expect(served.attrs).toMatchObject({
    'gen_ai.operation.name': 'chat',
    'gen_ai.response.finish_reasons': ['stop'],
    'tessera.attempt': 2,
    'tessera.failover': true,
    'tessera.outcome': 'succeeded',
    'tessera.model': completion.model,
    'tessera.account': userId,
    'tessera.key_id': keyId,
    'tessera.request_id': completion.id,
  });
  expect(served.attrs['gen_ai.provider.name']).toEqual(expect.any(String));
  expect(served.attrs['gen_ai.request.model']).toEqual(served.attrs['gen_ai.response.model']);
  expect(served.attrs['gen_ai.usage.input_tokens']).toBe(completion.usage?.prompt_tokens);
  expect(served.attrs['gen_ai.usage.output_tokens']).toBe(completion.usage?.completion_tokens);
  expect(served.attrs['tessera.credits']).toEqual(expect.any(Number));
  // The served call was made by the workflow's second local activity; the first attempt, started by the API beside
  // the workflow's start and adopted by the activity, is the request's child (the activity's when the API could not).
  expect(executed.map((span) => span.spanId)).toContain(served.parentSpanId);
  expect([server.spanId, ...executed.map((span) => span.spanId)]).toContain(failed.parentSpanId);

  // No prompt or answer text leaves the platform without the opt-in.
  expect(trace.some((span) => 'gen_ai.input.messages' in span.attrs || 'gen_ai.output.messages' in span.attrs)).toBe(
    false,
  );
  expect(bodies.some((body) => body.includes(secret))).toBe(false);
  const answer = completion.choices[0]?.message.content ?? '';
  if (answer.length > 8) expect(bodies.some((body) => body.includes(answer))).toBe(false);
}, 60_000);
