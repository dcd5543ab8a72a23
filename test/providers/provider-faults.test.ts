/** Each simulator fault, through each adapter: the failure must surface as the right ProviderError kind. */
import { describe, expect, it } from '@jest/globals';
import type { ProviderRequest } from '../../activities/providers/types.ts';
import { collect, collectUntilFailure, failureOf, protocols, useProviderHarness } from './provider-harness.ts';

const harness = useProviderHarness({ afterEach: ['faults'] });

describe.each(protocols)('%s adapter under faults', (protocol) => {
  const model = `faulty-${protocol}`;
  const request: ProviderRequest = { model, messages: [{ role: 'user', content: 'Tell me something long enough' }] };
  const match = { model, protocol };

  it('429 with Retry-After is retryable and carries the delay', async () => {
    await harness.control.addFault({ match, fault: { status: 429, retry_after: 7 } });
    const adapter = harness.adapter(protocol);
    for (const error of [
      await failureOf(adapter.generate(request)),
      await failureOf(collect(adapter.stream(request))),
    ]) {
      expect(error).toMatchObject({ kind: 'http', status: 429, retryable: true, retryAfterSeconds: 7 });
      expect(error.message).toContain('simulated fault');
    }
  });

  it('400 is not retryable', async () => {
    await harness.control.addFault({ match, fault: { status: 400 } });
    const error = await failureOf(harness.adapter(protocol).generate(request));
    expect(error).toMatchObject({ kind: 'http', status: 400, retryable: false });
  });

  it('503 is retryable', async () => {
    await harness.control.addFault({ match, fault: { status: 503 } });
    const error = await failureOf(collect(harness.adapter(protocol).stream(request)));
    expect(error).toMatchObject({ kind: 'http', status: 503, retryable: true });
  });

  it('latency beyond the connect timeout is a timeout', async () => {
    await harness.control.addFault({ match, fault: { latency_ms: 2_000 } });
    const adapter = harness.adapter(protocol, { connectTimeoutMs: 100 });
    const started = Date.now();
    expect(await failureOf(adapter.generate(request))).toMatchObject({ kind: 'timeout', retryable: true });
    expect(await failureOf(collect(adapter.stream(request)))).toMatchObject({ kind: 'timeout' });
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('latency within the timeouts only delays the answer', async () => {
    await harness.control.addFault({ match, fault: { latency_ms: 50 } });
    const response = await harness.adapter(protocol, { connectTimeoutMs: 1_000 }).generate(request);
    expect(response.finishReason).toBe('stop');
  });

  it('a stall beyond the idle timeout is kind stalled, after the parts already sent', async () => {
    await harness.control.addFault({ match, fault: { stall_after_tokens: 2, stall_ms: 2_000 } });
    const adapter = harness.adapter(protocol, { idleTimeoutMs: 150 });
    const { parts, error } = await collectUntilFailure(adapter.stream(request));
    expect(error).toMatchObject({ kind: 'stalled', retryable: true });
    expect(parts.filter((part) => part.type === 'text-delta')).toHaveLength(2);
  });

  it('a stall in a non-streaming answer runs into the request timeout', async () => {
    await harness.control.addFault({ match, fault: { stall_after_tokens: 0, stall_ms: 2_000 } });
    const error = await failureOf(harness.adapter(protocol, { requestTimeoutMs: 150 }).generate(request));
    expect(error).toMatchObject({ kind: 'timeout' });
  });

  it('a cut connection fails the stream after the parts already sent', async () => {
    await harness.control.addFault({ match, fault: { cut_after_tokens: 3 } });
    const { parts, error } = await collectUntilFailure(harness.adapter(protocol).stream(request));
    expect(['network', 'malformed']).toContain(error.kind);
    expect(error.retryable).toBe(true);
    expect(parts.filter((part) => part.type === 'text-delta')).toHaveLength(3);
    expect(parts.some((part) => part.type === 'finish')).toBe(false);
  });

  it('a cut connection fails a non-streaming call', async () => {
    await harness.control.addFault({ match, fault: { cut_after_tokens: 0 } });
    const error = await failureOf(harness.adapter(protocol).generate(request));
    expect(['network', 'malformed']).toContain(error.kind);
  });

  it('an unparsable event is kind malformed', async () => {
    await harness.control.addFault({ match, fault: { malformed_after_tokens: 2 } });
    const { parts, error } = await collectUntilFailure(harness.adapter(protocol).stream(request));
    expect(error).toMatchObject({ kind: 'malformed', retryable: true });
    expect(parts.filter((part) => part.type === 'text-delta')).toHaveLength(2);
  });

  it('an unparsable body is kind malformed', async () => {
    await harness.control.addFault({ match, fault: { malformed_after_tokens: 0 } });
    expect(await failureOf(harness.adapter(protocol).generate(request))).toMatchObject({ kind: 'malformed' });
  });

  it('without usage the stream still ends with finish, and generate reports null usage', async () => {
    await harness.control.addFault({ match, fault: { no_usage: true } });
    const adapter = harness.adapter(protocol);
    const parts = await collect(adapter.stream(request));
    expect(parts.at(-1)).toMatchObject({ type: 'finish', reason: 'stop' });
    expect(parts.some((part) => part.type === 'usage')).toBe(false);
    const response = await adapter.generate(request);
    expect(response.usage).toBeNull();
    expect(response.content).toMatch(/^Simulated reply/);
  });

  it('a fault limited by times applies to that many requests only', async () => {
    await harness.control.addFault({ match, times: 1, fault: { status: 500 } });
    const adapter = harness.adapter(protocol);
    expect(await failureOf(adapter.generate(request))).toMatchObject({ status: 500 });
    expect((await adapter.generate(request)).finishReason).toBe('stop');
  });

  it('a caller abort during a stream is kind aborted', async () => {
    await harness.control.addFault({ match, fault: { stall_after_tokens: 1, stall_ms: 5_000 } });
    const controller = new AbortController();
    let received = 0;
    const failure = failureOf(
      (async () => {
        for await (const part of harness.adapter(protocol).stream(request, { signal: controller.signal })) {
          expect(part.type).toBe('text-delta');
          received += 1;
          controller.abort();
        }
      })(),
    );
    expect(await failure).toMatchObject({ kind: 'aborted', retryable: false });
    expect(received).toBe(1);
  });

  it('a consumer that stops early releases the stream', async () => {
    await harness.control.addFault({ match, fault: { stall_after_tokens: 1, stall_ms: 5_000 } });
    const stream = harness.adapter(protocol).stream(request);
    for await (const part of stream) {
      expect(part.type).toBe('text-delta');
      break;
    }
    // Nothing to await: closing the harness below must not wait for the five-second stall.
  });
});

it('an unreachable upstream is kind network', async () => {
  const adapter = harness.adapter('openai', { baseUrl: 'http://127.0.0.1:9/v1' });
  const error = await failureOf(adapter.generate({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }));
  expect(error).toMatchObject({ kind: 'network', retryable: true });
});
