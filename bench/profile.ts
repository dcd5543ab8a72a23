/**
 * CPU profile of this process's main JavaScript thread over one phase (node:inspector), summarized by self time
 * per package and per function. Workflow code runs in the worker's workflow thread and Rust core in its own
 * threads: neither shows up here (see the per-thread CPU table for them).
 */
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface ProfileSummary {
  totalMs: number;
  byPackage: Array<{ name: string; ms: number }>;
  byFunction: Array<{ name: string; ms: number }>;
}

export async function profile<T>(
  file: string | undefined,
  run: () => Promise<T>,
): Promise<{ value: T; summary: ProfileSummary }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  let value: T;
  let result: { profile: Profile };
  try {
    value = await run();
  } finally {
    result = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
    session.disconnect();
  }
  if (file) await writeFile(file, JSON.stringify(result.profile));
  return { value, summary: summarizeProfile(result.profile) };
}

const repositoryRoot = new URL('../', import.meta.url).href;

function packageOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native/builtin)';
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const parts = url.slice(modules + 14).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  if (url.startsWith(repositoryRoot)) return `tessera ${url.slice(repositoryRoot.length).split('/')[0]}/`;
  return url;
}

export function summarizeProfile(profile: Profile): ProfileSummary {
  const selfMs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const delta = (deltas[i + 1] ?? 0) / 1000;
    selfMs.set(samples[i]!, (selfMs.get(samples[i]!) ?? 0) + delta);
  }
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, number>();
  for (const node of profile.nodes) {
    const ms = selfMs.get(node.id) ?? 0;
    if (ms === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const pkg = packageOf(url, functionName);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + ms);
    const name = `${functionName || '(anonymous)'} ${pkg}${url ? `:${lineNumber + 1}` : ''}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + ms);
  }
  const sorted = (map: Map<string, number>) =>
    [...map.entries()].map(([name, ms]) => ({ name, ms })).sort((a, b) => b.ms - a.ms);
  return {
    totalMs: (profile.endTime - profile.startTime) / 1000,
    byPackage: sorted(byPackage),
    byFunction: sorted(byFunction),
  };
}

/**
 * A CPU profile of another Node process's main thread: its inspector is opened with SIGUSR1 (Node's documented way
 * to start it in a running process, on 127.0.0.1:9229), and the profiler driven over the DevTools protocol. One
 * process at a time (the port is fixed). `stop()` writes the profile (a .cpuprofile: speedscope and Chrome's DevTools
 * draw its flame graph) and summarizes it.
 */
export async function profileProcess(
  pid: number,
  file: string,
): Promise<{ stop(): Promise<ProfileSummary & { profile: Profile }> }> {
  process.kill(pid, 'SIGUSR1');
  let url: string | undefined;
  for (let tries = 0; !url && tries < 100; tries++) {
    try {
      const targets = (await (await fetch('http://127.0.0.1:9229/json/list')).json()) as Array<{
        webSocketDebuggerUrl: string;
      }>;
      url = targets[0]?.webSocketDebuggerUrl;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  if (!url) throw new Error(`the inspector of process ${pid} did not open`);
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  let nextId = 1;
  const pending = new Map<number, (result: unknown) => void>();
  socket.onmessage = (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
    if (message.id !== undefined) pending.get(message.id)?.(message.result);
  };
  const send = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<unknown>((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      socket.send(JSON.stringify({ id, method, params }));
    });
  await send('Profiler.enable');
  await send('Profiler.setSamplingInterval', { interval: 500 });
  await send('Profiler.start');
  return {
    async stop() {
      const { profile } = (await send('Profiler.stop')) as { profile: Profile };
      // The inspector stays open until the process ends; only this session closes.
      socket.close();
      await writeFile(file, JSON.stringify(profile));
      return { ...summarizeProfile(profile), profile };
    },
  };
}
