/**
 * What every bench script does around its measurements: the quick switch (BENCH_QUICK=1, a smoke run), its log
 * lines on stderr under its name, and its ending (the exit code set, and a forced exit a little later should a
 * keep-alive socket or a timer still hold the event loop).
 */

/** BENCH_QUICK=1 (or `--quick`): each bench runs a fraction of its work; its report says it is a smoke test, not figures. */
export const quick = process.env.BENCH_QUICK === '1' || process.argv.includes('--quick');

/** A request count for a quick run: an eighth, at least 5 (the full count otherwise). */
export const shrink = (n: number): number => (quick ? Math.max(5, Math.round(n / 8)) : n);

/** A log for the bench `name` (`[bench:chat] …` on stderr, so stdout stays free). */
export const benchLog =
  (name: string) =>
  (line: string): void =>
    void process.stderr.write(`[${name}] ${line}\n`);

export const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

/** Ends the bench with `exitCode`, forcing the exit after 5 s if something still holds the process open. */
export function endBench(exitCode: number): void {
  process.exitCode = exitCode;
  setTimeout(() => process.exit(exitCode), 5_000).unref();
}
