/** Markdown rendering of the bench's figures. */
import type { Summary } from './load.ts';
import type { CpuBreakdown, MemoryPoint } from './resources.ts';
import type { StageSummary } from './spans.ts';

export const targets = { addedP50Ms: 5, addedP99Ms: 20, completionsPerSecond: 200 } as const;

export const ms = (value: number): string => (Number.isFinite(value) ? value.toFixed(2) : 'n/a');
const ratio = (value: number): string => (Number.isFinite(value) ? `${value.toFixed(1)}×` : 'n/a');
const check = (ok: boolean): string => (ok ? '✅' : '❌');

export interface LatencyRow {
  clients: number;
  gateway: Summary;
  direct: Summary;
  /** Whether the one-client targets apply to this row. */
  targeted: boolean;
}

export function latencyTable(rows: LatencyRow[]): string {
  const lines = [
    '| clients | n gateway / direct | gateway p50 | gateway p99 | direct p50 | direct p99 | **added p50** | **added p99** | ratio p50 | ratio p99 | errors gw / direct | target |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const { clients, gateway, direct, targeted } of rows) {
    const addedP50 = gateway.p50 - direct.p50;
    const addedP99 = gateway.p99 - direct.p99;
    const target = targeted
      ? `added p50 < ${targets.addedP50Ms} ms ${check(addedP50 < targets.addedP50Ms)} · added p99 < ${targets.addedP99Ms} ms ${check(addedP99 < targets.addedP99Ms)}`
      : '—';
    lines.push(
      `| ${clients} | ${gateway.n} / ${direct.n} | ${ms(gateway.p50)} | ${ms(gateway.p99)} | ${ms(direct.p50)} | ${ms(direct.p99)} | **${ms(addedP50)}** | **${ms(addedP99)}** | ${ratio(gateway.p50 / direct.p50)} | ${ratio(gateway.p99 / direct.p99)} | ${gateway.errors} / ${direct.errors} | ${target} |`,
    );
  }
  return lines.join('\n');
}

export interface ThroughputRow {
  side: 'gateway' | 'direct';
  summary: Summary;
  cpu: CpuBreakdown;
  seconds: number;
}

export function throughputTable(rows: ThroughputRow[]): string {
  const lines = [
    '| side | completions/s | completions | latency p50 | latency p99 | errors | CPU s: bench process / Temporal / PostgreSQL / other | CPU ms per completion | target |',
    '|---|---:|---:|---:|---:|---:|---|---:|---|',
  ];
  const direct = rows.find((row) => row.side === 'direct');
  for (const { side, summary, cpu, seconds } of rows) {
    const completions = summary.n;
    const cpuTotal = cpu.bench + cpu.temporal + cpu.postgres;
    const perCompletion = completions > 0 ? (cpuTotal * 1000) / completions : Number.NaN;
    const target =
      side === 'gateway'
        ? `≥ ${targets.completionsPerSecond}/s ${check(summary.perSecond >= targets.completionsPerSecond)}` +
          (direct ? ` (${((summary.perSecond / direct.summary.perSecond) * 100).toFixed(1)}% of direct)` : '')
        : 'base';
    lines.push(
      `| ${side} | **${summary.perSecond.toFixed(1)}** | ${completions} in ${seconds.toFixed(1)} s | ${ms(summary.p50)} | ${ms(summary.p99)} | ${summary.errors} | ${cpu.bench.toFixed(1)} / ${cpu.temporal.toFixed(1)} / ${cpu.postgres.toFixed(1)} / ${cpu.other.toFixed(1)} | ${ms(perCompletion)} | ${target} |`,
    );
  }
  return lines.join('\n');
}

export function memoryTable(points: Array<{ label: string; memory: MemoryPoint; temporalRssMiB?: number }>): string {
  const lines = [
    '| when | bench RSS MiB | bench heap used MiB | Temporal dev server RSS MiB |',
    '|---|---:|---:|---:|',
  ];
  for (const { label, memory, temporalRssMiB } of points) {
    lines.push(
      `| ${label} | ${memory.rssMiB.toFixed(1)} | ${memory.heapUsedMiB.toFixed(1)} | ${temporalRssMiB === undefined ? '—' : temporalRssMiB.toFixed(1)} |`,
    );
  }
  return lines.join('\n');
}

export function stageTable(rows: StageSummary[]): string {
  const lines = ['| stage | p50 ms | p99 ms | mean ms |', '|---|---:|---:|---:|'];
  for (const row of rows) lines.push(`| ${row.name} | ${ms(row.p50)} | ${ms(row.p99)} | ${ms(row.mean)} |`);
  return lines.join('\n');
}

/** The gateway run's CPU by thread of this process, per completion. */
export function threadTable(cpu: CpuBreakdown, completions: number): string {
  const lines = ['| thread (bench process) | CPU s | CPU ms per completion |', '|---|---:|---:|'];
  const rows = [...cpu.threads.entries()].filter(([, seconds]) => seconds >= 0.01).sort((a, b) => b[1] - a[1]);
  for (const [name, seconds] of rows) {
    lines.push(`| \`${name}\` | ${seconds.toFixed(2)} | ${ms((seconds * 1000) / completions)} |`);
  }
  lines.push(
    `| Temporal dev server (other process) | ${cpu.temporal.toFixed(2)} | ${ms((cpu.temporal * 1000) / completions)} |`,
  );
  lines.push(
    `| PostgreSQL backends (other processes) | ${cpu.postgres.toFixed(2)} | ${ms((cpu.postgres * 1000) / completions)} |`,
  );
  return lines.join('\n');
}
