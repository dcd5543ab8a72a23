/**
 * One arm's turn within a cell, the same for every bench: a warm-up at the cell's concurrency (connections open,
 * code paths compiled, pools filled), then the measured load; for a platform arm, what its processes spent over it.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { ProcessInfo } from '../scripts/lib/processes.ts';
import { profileProcess } from './profile.ts';
import type { Sample } from './http-client.ts';
import { runLoad, summarize, type LoadOptions } from './load.ts';
import type { ArmResult } from './report.ts';
import { snapshot, usageBetween, type Usage } from './resources.ts';

export interface MeasuredArm {
  name: string;
  /** One request (or one unit of work, e.g. a tool loop of two calls), timed and checked. */
  call: () => Promise<Sample>;
  /** The warm-up's request when it must not be the measured one's (e.g. it would grow a session's history). */
  warmUpCall?: () => Promise<Sample>;
  /** The platform processes to meter while this arm runs. */
  processes?: () => Promise<ProcessInfo[]>;
}

export interface MeasuredResult extends ArmResult {
  /** The measured responses' `Server-Timing` headers. */
  serverTimings: string[];
}

export async function measureArm(
  arm: MeasuredArm,
  options: {
    load: LoadOptions;
    /** Default: the load's concurrency, max(2 × clients, 20) requests, at most 10 s. */
    warmUp?: LoadOptions;
    /** The figure of a sample (default: the whole response time). */
    pick?: (sample: Sample) => number | undefined;
    log?: (line: string) => void;
    /** Called right before and right after the measured load (after the warm-up), e.g. to read counters. */
    beforeLoad?: () => Promise<void>;
    afterLoad?: () => Promise<void>;
    /**
     * Records the arm's processes with Linux perf over the measured load (call graphs, 499 Hz) into this file: for
     * JavaScript frames, start the Node processes with --perf-basic-prof (BENCH_NODE_OPTIONS). docs/benchmarks.md
     * says how the flame graphs are drawn from it.
     */
    perfFile?: string;
    /** A CPU profile of this process's main thread over the measured load, into `file` (bench/profile.ts). */
    cpuProfile?: { pid: () => Promise<number | undefined>; file: string };
  },
): Promise<MeasuredResult> {
  const { load } = options;
  const warmUp = options.warmUp ?? {
    concurrency: load.concurrency,
    requests: Math.max(load.concurrency * 2, 20),
    maxMs: 10_000,
  };
  await runLoad(warmUp, arm.warmUpCall ?? arm.call);
  await options.beforeLoad?.();
  const before = arm.processes ? await snapshot(await arm.processes()) : undefined;
  const perf = options.perfFile && arm.processes ? await startPerf(options.perfFile, await arm.processes()) : null;
  const profiledPid = await options.cpuProfile?.pid();
  const cpuProfile = profiledPid ? await profileProcess(profiledPid, options.cpuProfile!.file) : null;
  const result = await runLoad(load, arm.call);
  await perf?.stop();
  const profiled = await cpuProfile?.stop();
  if (profiled) {
    const top = (rows: Array<{ name: string; ms: number }>) =>
      rows
        .slice(0, 25)
        .map((row) => `    ${((row.ms / profiled.totalMs) * 100).toFixed(1).padStart(5)} %  ${row.name}`)
        .join('\n');
    options.log?.(`  CPU profile of process ${profiledPid} (${options.cpuProfile!.file}), self time by package:`);
    options.log?.(top(profiled.byPackage));
    options.log?.('  by function:');
    options.log?.(top(profiled.byFunction));
  }
  let usage: Usage | undefined;
  if (before && arm.processes) {
    // Processes started meanwhile (a new PostgreSQL backend) are counted from zero.
    usage = usageBetween(before, await snapshot(await arm.processes()));
  }
  await options.afterLoad?.();
  const summary = summarize(result, options.pick ?? ((sample) => sample.totalMs));
  options.log?.(
    `  ${arm.name.padEnd(20)} n=${summary.n} errors=${summary.errors} p50=${summary.p50.toFixed(1)} ` +
      `p99=${summary.p99.toFixed(1)} ${summary.perSecond.toFixed(0)}/s`,
  );
  const serverTimings = result.samples.flatMap((sample) => (sample.serverTiming ? [sample.serverTiming] : []));
  return { arm: arm.name, summary, usage, serverTimings };
}

async function startPerf(file: string, processes: ProcessInfo[]): Promise<{ stop(): Promise<void> }> {
  const pids = processes.map((info) => info.pid).join(',');
  const child = spawn('perf', ['record', '-F', '499', '-g', '-o', file, '-p', pids], { stdio: 'ignore' });
  // perf attaches within a moment; a load begun before would go partly unrecorded, which a profile tolerates.
  await Promise.race([once(child, 'spawn'), once(child, 'error')]);
  return {
    async stop() {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGINT');
      await exited;
    },
  };
}
