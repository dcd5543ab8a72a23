/** Markdown rendering of the bench's figures, and the writing of a results file. */
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { quick } from './bench-process.ts';
import { percentile, type Summary } from './load.ts';
import { roles, total, type Role, type Usage } from './resources.ts';

export const ms = (value: number): string => (Number.isFinite(value) ? value.toFixed(1) : 'n/a');
const perSecond = (value: number): string => (Number.isFinite(value) ? value.toFixed(0) : 'n/a');
const percent = (value: number): string => (Number.isFinite(value) ? `${(value * 100).toFixed(0)} %` : 'n/a');
const check = (ok: boolean): string => (ok ? '✅' : '❌');

export interface CellSpec {
  id: string;
  title: string;
  clients: number;
  upstreamMs: number;
  stream: boolean;
  /** Count-limited cells (latency at one client)… */
  requests?: number;
  /** …or duration-limited ones (throughput under load). */
  seconds?: number;
  /** The issue's targets for Tessera in this cell. */
  targets?: { minPerSecond?: number; addedP50Ms?: number; addedP99Ms?: number };
}

export interface ArmResult {
  arm: string;
  summary: Summary;
  /** The platform's spending during the arm (Tessera arms only). */
  usage?: Usage;
}

export interface CellResult {
  cell: CellSpec;
  arms: ArmResult[];
}

/** One table per cell: every arm with its latency (or time to first token), added latency and throughput. */
export function cellTable({ cell, arms }: CellResult): string {
  const direct = arms.find((arm) => arm.arm === 'direct')?.summary;
  const measure = cell.stream ? 'time to first token' : 'latency';
  const lines = [
    `| arm | n | errors | ${measure} p50 | p99 | **added p50** | **added p99** | req/s | % of direct req/s | target |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const { arm, summary } of arms) {
    const addedP50 = direct ? summary.p50 - direct.p50 : Number.NaN;
    const addedP99 = direct ? summary.p99 - direct.p99 : Number.NaN;
    const share = direct ? summary.perSecond / direct.perSecond : Number.NaN;
    const targets: string[] = [];
    if (arm.startsWith('tessera') && cell.targets) {
      const { minPerSecond, addedP50Ms, addedP99Ms } = cell.targets;
      if (minPerSecond !== undefined) targets.push(`≥ ${minPerSecond}/s ${check(summary.perSecond >= minPerSecond)}`);
      if (addedP50Ms !== undefined) targets.push(`p50 +≤${addedP50Ms} ${check(addedP50 <= addedP50Ms)}`);
      if (addedP99Ms !== undefined) targets.push(`p99 +≤${addedP99Ms} ${check(addedP99 <= addedP99Ms)}`);
      if (cell.targets.minPerSecond !== undefined) targets.push(`no error ${check(summary.errors === 0)}`);
    }
    const isDirect = arm === 'direct';
    lines.push(
      `| ${arm} | ${summary.n} | ${summary.errors} | ${ms(summary.p50)} | ${ms(summary.p99)} | ` +
        `${isDirect ? '—' : `**+${ms(addedP50)}**`} | ${isDirect ? '—' : `**+${ms(addedP99)}**`} | ` +
        `${perSecond(summary.perSecond)} | ${isDirect ? '100 %' : percent(share)} | ${targets.join(' · ') || '—'} |`,
    );
  }
  return lines.join('\n');
}

/**
 * CPU milliseconds and kilobytes written per request (`unit`: what one request is, e.g. a completion), by process
 * role, for each metered (platform) arm of each cell (or phase: only its title, and each arm's count and rate, are
 * read).
 */
export function costTable(
  results: Array<{
    cell: Pick<CellSpec, 'title'>;
    arms: Array<{ arm: string; summary: Pick<Summary, 'n' | 'perSecond'>; usage?: Usage }>;
  }>,
  unit = 'completion',
): string {
  // The roles some arm spent CPU in (Portkey's arm is metered too: its process is its whole cost).
  const shown: Role[] = roles.filter(
    (role) => role !== 'other' && results.some(({ arms }) => arms.some(({ usage }) => usage?.cpu.get(role))),
  );
  const written: Role[] = ['API', 'Temporal', 'PostgreSQL'];
  const lines = [
    `| cell | arm | ${unit}s/s | CPU ms per ${unit}: ${shown.join(' / ')} | **CPU ms total** | CPU busy (of 2 cores) | KB written per ${unit} by the processes: ${written.join(' / ')} | **machine disk KB per ${unit}** |`,
    '|---|---|---:|---|---:|---:|---|---:|',
  ];
  for (const { cell, arms } of results) {
    for (const { arm, summary, usage } of arms) {
      // An arm that answered nothing (Portkey's streamed requests) has no cost per request to show.
      if (!usage || summary.n === 0) continue;
      const completions = summary.n;
      const cpuMs = (role: Role) => ((usage.cpu.get(role) ?? 0) * 1000) / completions;
      const cpuTotal = (total(usage.cpu) * 1000) / completions;
      const writtenKb = (role: Role) => (usage.written.get(role) ?? 0) / 1024 / completions;
      const machineKb = usage.machineWritten / 1024 / completions;
      const busy = total(usage.cpu) / usage.seconds / 2;
      lines.push(
        `| ${cell.title} | ${arm} | ${perSecond(summary.perSecond)} | ${shown.map((role) => ms(cpuMs(role))).join(' / ')} | ` +
          `**${ms(cpuTotal)}** | ${percent(busy)} | ${written.map((role) => ms(writtenKb(role))).join(' / ')} | ` +
          `**${ms(machineKb)}** |`,
      );
    }
  }
  return lines.join('\n');
}

/** The Node processes' CPU per request (`unit`) by thread, for one Tessera arm. */
export function threadTable(result: ArmResult, unit = 'completion'): string {
  const usage = result.usage;
  if (!usage) return '';
  const completions = Math.max(1, result.summary.n);
  const lines = [`| thread (API and worker processes) | CPU ms per ${unit} |`, '|---|---:|'];
  const rows = [...usage.threads.entries()].sort((a, b) => b[1] - a[1]);
  for (const [name, seconds] of rows) lines.push(`| ${name} | ${ms((seconds * 1000) / completions)} |`);
  return lines.join('\n');
}

/**
 * Resident memory of every platform process by role, RSS and PSS (shared pages divided among the processes mapping
 * them: PostgreSQL's shared buffers once, not once per backend), with the sum of each: the PSS sum is what the
 * platform takes from the machine.
 */
export function memoryTable(rows: Array<{ label: string; rss: Map<Role, number>; pss: Map<Role, number> }>): string {
  const shown: Role[] = roles.filter((role) => rows.some(({ rss }) => rss.get(role)));
  const lines = [
    `| when | RSS MiB: ${shown.join(' / ')} | **RSS sum** | PSS MiB: ${shown.join(' / ')} | **PSS sum** |`,
    '|---|---|---:|---|---:|',
  ];
  for (const { label, rss, pss } of rows) {
    const of = (memory: Map<Role, number>) => shown.map((role) => (memory.get(role) ?? 0).toFixed(0)).join(' / ');
    lines.push(`| ${label} | ${of(rss)} | **${total(rss).toFixed(0)}** | ${of(pss)} | **${total(pss).toFixed(0)}** |`);
  }
  return lines.join('\n');
}

/** The API's own Server-Timing stages (median over the cell's requests). */
export function stageTable(stages: Array<{ name: string; p50: number; p99: number }>): string {
  const lines = ['| stage (Server-Timing) | p50 ms | p99 ms |', '|---|---:|---:|'];
  for (const stage of stages) lines.push(`| ${stage.name} | ${ms(stage.p50)} | ${ms(stage.p99)} |`);
  return lines.join('\n');
}

export interface StageTiming {
  name: string;
  p50: number;
  p99: number;
}

/** Median and p99 of each stage of a set of `Server-Timing` headers. */
export function summarizeTimings(headers: string[]): StageTiming[] {
  const byStage = new Map<string, number[]>();
  for (const header of headers) {
    for (const part of header.split(',')) {
      const [name, ...params] = part.trim().split(';');
      const duration = params.map((param) => /^dur=([\d.]+)$/.exec(param.trim())?.[1]).find(Boolean);
      if (!name || duration === undefined) continue;
      byStage.set(name, [...(byStage.get(name) ?? []), Number(duration)]);
    }
  }
  return [...byStage].map(([name, values]) => ({ name, p50: percentile(values, 50), p99: percentile(values, 99) }));
}

/** The machine and the date, as a report's first line begins. */
export function machineLine(): string {
  const cpu = cpus();
  return `Node ${process.version}, ${cpu.length} CPU(s) (${cpu[0]?.model.trim() ?? 'unknown'}), ${new Date().toISOString()}`;
}

/** A report's opening: the machine and the date, and a warning when it is a quick run; then the bench's own words. */
export function reportLead(): string {
  return `${machineLine()}${quick ? ' — **QUICK run (BENCH_QUICK=1): a smoke test, not figures**' : ''}. `;
}

/** The machine's load average as each measured phase of a bench began (`note` at the start of each). */
export function loadNotes(): { note(phase: string): void; lines(): string[] } {
  const loads: Array<{ phase: string; load: number[] }> = [];
  return {
    note: (phase) => loads.push({ phase, load: loadavg() }),
    lines: () => [
      '## The machine during the run',
      '',
      'The load average (1, 5 and 15 minutes) when each measured phase began: on these cores anything above about 1 ' +
        "is other work (other engineers' test runs and benches share the machine), and every figure above pays for it.",
      '',
      '| phase | load average |',
      '|---|---|',
      ...loads.map(({ phase, load }) => `| ${phase} | ${load.map((value) => value.toFixed(2)).join(' / ')} |`),
      '',
    ],
  };
}

/** A report's lines saying why the run failed (none when it did not). */
export const failureLines = (failure: string | undefined): string[] =>
  failure ? [`**The run failed:** ${failure}`, ''] : [];

/** A report's last line: how long the whole bench took. */
const wallTimeLine = (startedAt: number): string =>
  `Bench wall time: ${((Date.now() - startedAt) / 1000).toFixed(0)} s.`;

/** A table's "added" cell: `value` − `base` in ms; — on the base's own row or without a base. */
export const addedCell = (value: number, base: number | undefined, isBase: boolean): string =>
  isBase || base === undefined ? '—' : ms(value - base);

/** A table's "ratio" cell: `value` / `base` with `digits` decimals; — on the base's own row, without a base, or ∞. */
export const ratioCell = (value: number, base: number | undefined, isBase: boolean, digits = 2): string =>
  isBase || base === undefined || !Number.isFinite(value / base) ? '—' : `${(value / base).toFixed(digits)}×`;

/** A requests-per-second cell with one decimal. */
export const rateCell = (value: number): string => (Number.isFinite(value) ? value.toFixed(1) : 'n/a');

/**
 * Writes the results file bench/`file`: the `title`, the bench's `lines` (opening with reportLead()), and the wall
 * time since `startedAt`, formatted by writeMarkdown; logs that it did.
 */
export async function writeResults(
  file: string,
  title: string,
  lines: string[],
  { startedAt, log }: { startedAt: number; log: (line: string) => void },
): Promise<void> {
  const markdown = [`# ${title}`, '', ...lines, wallTimeLine(startedAt), ''].join('\n');
  await writeMarkdown(new URL(`./${file}`, import.meta.url), markdown);
  log(`wrote bench/${file}`);
}

/** Writes a Markdown report, formatted by the repository's Prettier settings (unformatted if Prettier fails). */
export async function writeMarkdown(file: URL, markdown: string): Promise<void> {
  let formatted = markdown;
  try {
    const prettier = await import('prettier');
    const options = (await prettier.resolveConfig(file.pathname)) ?? {};
    formatted = await prettier.format(markdown, { ...options, filepath: file.pathname });
  } catch {
    // unformatted then
  }
  await writeFile(file, formatted);
}
