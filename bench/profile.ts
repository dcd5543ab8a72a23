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
