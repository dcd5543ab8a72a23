/**
 * Where a first token's time goes on the page's main thread, read from Chromium's performance trace (bench/web.ts
 * with BENCH_WEB_TRACE): from the app's User Timing marks (`tessera:first-token-received`, `-committed`, `-painted`)
 * to the trace events of the same thread around them.
 */
import { percentile } from './load.ts';

/** The trace categories the summary reads: tasks, the frame's stages, and User Timing marks. */
export const traceCategories = [
  'toplevel',
  'blink.user_timing',
  'devtools.timeline',
  'disabled-by-default-devtools.timeline',
  'disabled-by-default-devtools.timeline.frame',
];

interface TraceEvent {
  name: string;
  cat: string;
  ph: string;
  pid: number;
  tid: number;
  /** Microseconds (monotonic). */
  ts: number;
  /** Wall time, for complete events (µs). */
  dur?: number;
  /** Thread (CPU) time, for complete events (µs). */
  tdur?: number;
}

/** The frame's stages on the main thread, by trace event name. */
const stages: Record<string, string> = {
  UpdateLayoutTree: 'style',
  Layout: 'layout',
  PrePaint: 'paint',
  Paint: 'paint',
  Layerize: 'paint',
  Commit: 'commit',
};

const ms = (microseconds: number) => microseconds / 1000;
const fixed = (value: number) => value.toFixed(1);

/** One line per first token, then medians and 95th percentiles of each part. */
export function traceSummary(trace: { traceEvents: TraceEvent[] } | TraceEvent[]): string[] {
  const events = Array.isArray(trace) ? trace : trace.traceEvents;
  const marks = (suffix: string) =>
    events.filter((event) => event.name === `tessera:first-token-${suffix}` && event.cat.includes('user_timing'));
  const committed = marks('committed');
  const painted = marks('painted');
  const rows: Array<Record<string, number>> = [];
  for (const received of marks('received')) {
    const sameThread = (event: TraceEvent) => event.pid === received.pid && event.tid === received.tid;
    const commit = committed.find((event) => sameThread(event) && event.ts >= received.ts);
    const paint = painted.find((event) => sameThread(event) && event.ts >= received.ts);
    if (!commit || !paint) continue;
    const complete = events.filter(
      (event) =>
        sameThread(event) && event.ph === 'X' && event.dur !== undefined && event.ts + event.dur! > received.ts,
    );
    const tasks = complete.filter(
      (event) => event.name === 'RunTask' || event.name === 'ThreadControllerImpl::RunTask',
    );
    const task = tasks.find((event) => event.ts <= received.ts && received.ts <= event.ts + event.dur!);
    const until = (event: TraceEvent) => event.ts < paint.ts;
    const row: Record<string, number> = {
      arrivalToPaintWall: ms(paint.ts - received.ts),
      taskWall: ms(task?.dur ?? 0),
      taskCpu: ms(task?.tdur ?? 0),
      toCommit: ms(commit.ts - received.ts),
      mainThreadCpu: ms(tasks.filter(until).reduce((sum, event) => sum + Math.min(event.tdur ?? 0, event.dur!), 0)),
      style: 0,
      layout: 0,
      paint: 0,
      commit: 0,
    };
    for (const event of complete.filter(until)) {
      const stage = stages[event.name];
      if (stage) row[stage]! += ms(event.dur!);
    }
    rows.push(row);
  }
  const columns = Object.keys(rows[0] ?? {});
  const lines = rows.map(
    (row, index) =>
      `trace, message ${index + 1}: ${columns.map((name) => `${name} ${fixed(row[name]!)}`).join(', ')} ms`,
  );
  for (const p of rows.length ? [50, 95] : []) {
    const figures = columns.map(
      (name) =>
        `${name} ${fixed(
          percentile(
            rows.map((row) => row[name]!),
            p,
          ),
        )}`,
    );
    lines.push(`trace, p${p} of ${rows.length}: ${figures.join(', ')} ms`);
  }
  return lines.length ? lines : ['trace: no first-token marks found'];
}
