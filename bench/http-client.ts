/**
 * The bench's HTTP client: plain `node:http` over one keep-alive agent, used the same way for the gateway and
 * for the simulator so both sides pay the same client cost. Every request has a deadline, so no call can hang.
 */
import { Agent, request as httpRequest } from 'node:http';

export const agent = new Agent({ keepAlive: true, maxSockets: 256, keepAliveMsecs: 10_000 });

const requestTimeoutMs = 30_000;

export interface Sample {
  ok: boolean;
  status: number;
  /** Request start to the end of the response body. */
  totalMs: number;
  /** Streaming only: request start to the first content-bearing `data:` event. */
  firstTokenMs?: number;
  /** The response's `Server-Timing` header, when it sent one. */
  serverTiming?: string;
}

export interface Target {
  url: string;
  headers: Record<string, string>;
}

/**
 * POSTs a JSON body and reads the whole response; for event streams, also times the first content event. With
 * `expect`, a non-streamed 200 counts as a success only when its body passes it (an answer of the expected shape).
 */
export function post(
  target: Target,
  body: string,
  stream: boolean,
  expect?: (responseBody: string) => boolean,
): Promise<Sample> {
  const startedAt = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    const finish = (sample: Omit<Sample, 'totalMs'>) => {
      if (settled) return;
      settled = true;
      resolve({ ...sample, totalMs: performance.now() - startedAt });
    };
    const req = httpRequest(
      target.url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          accept: stream ? 'text/event-stream' : 'application/json',
          ...target.headers,
        },
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const serverTiming = [res.headers['server-timing']].flat().join(', ') || undefined;
        res.setEncoding('utf8');
        let firstTokenMs: number | undefined;
        let buffer = '';
        let sawDone = false;
        let responseBody = '';
        res.on('data', (chunk: string) => {
          if (expect && !stream) responseBody += chunk;
          if (!stream || status !== 200) return;
          if (firstTokenMs !== undefined && sawDone) return;
          buffer += chunk;
          for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
            const event = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            for (const line of event.split('\n')) {
              if (!line.startsWith('data:')) continue;
              const data = line.slice(5).trim();
              if (data === '[DONE]') sawDone = true;
              else if (firstTokenMs === undefined && hasContent(data)) firstTokenMs = performance.now() - startedAt;
            }
          }
        });
        res.on('end', () => {
          const ok =
            status === 200 &&
            (stream ? firstTokenMs !== undefined && sawDone : expect === undefined || expect(responseBody));
          finish({
            ok,
            status,
            ...(firstTokenMs === undefined ? {} : { firstTokenMs }),
            ...(serverTiming === undefined ? {} : { serverTiming }),
          });
        });
        res.on('error', () => finish({ ok: false, status }));
      },
    );
    req.setTimeout(requestTimeoutMs, () => req.destroy(new Error('bench request timed out')));
    req.on('error', () => finish({ ok: false, status: 0 }));
    req.end(body);
  });
}

/** A chunk whose first choice carries text or a tool-call fragment (not the bare role chunk). */
function hasContent(data: string): boolean {
  try {
    const chunk = JSON.parse(data) as {
      choices?: Array<{ delta?: { content?: string | null; tool_calls?: unknown[] } }>;
    };
    const delta = chunk.choices?.[0]?.delta;
    return (typeof delta?.content === 'string' && delta.content.length > 0) || (delta?.tool_calls?.length ?? 0) > 0;
  } catch {
    return false;
  }
}
