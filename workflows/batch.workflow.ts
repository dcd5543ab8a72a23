/**
 * batchRun: one batch of the Batch API (`POST /v1/batches`), from its input file to its output and error files.
 *
 * Its lines are its local activities (`runBatchLine`, activities/batches/batch-lines.ts), each the same router,
 * failover and ledger as a synchronous request, its answer written once to `batch_lines`; the history holds only what
 * each line came to. At most `window` lines are in flight: a few at first, grown by one with each line answered up to
 * the plan's batch concurrency, halved whenever a line finds every provider of its model saturated or down to the
 * reserve of its limits kept for requests someone waits on (that line waits, durably, until the provider's window
 * resets or its Retry-After passes, else 1 s doubling to a minute). That is how a batch takes what the limits leave
 * instead of driving a provider into 429s. A batch's lines never count against its account's request limits, so its
 * synchronous traffic never waits for it.
 *
 * History stays bounded however long the batch: after `linesPerRun` lines (or when Temporal suggests it) the run
 * waits for its lines in flight and continues as new with its progress. A cancel (`cancelBatch` signal, or the
 * `cancelling` status a line reads) and the expiry of the window stop new lines; lines in flight finish and stay in
 * the output, and the files are written with every line not run named in the error file.
 */
import {
  condition,
  continueAsNew,
  defineSignal,
  patched,
  proxyLocalActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { BatchLineActivities } from '../activities/batches/batch-lines.ts';
import type { BatchEnding, BatchProgress, BatchRunInput } from '../common/batches.ts';

export const cancelBatchSignal = defineSignal('cancelBatch');

/** Lines in flight when a batch starts (then one more per line answered, up to its concurrency). */
const startWindow = 4;
/** Lines started per run before it continues as new (about two history events each). */
const linesPerRun = 2_000;
/** The back-off of a line that found no capacity: 1 s, doubling with each round in a row, at most a minute. */
const backoffMs = (rounds: number) => Math.min(60_000, 1_000 * 2 ** Math.min(rounds, 6));

// Idempotent steps (each line's answer is written once; the files are written under fixed ids), retried until they
// succeed: an outage of the platform's database or byte store is waited out, never the batch's failure.
const retry = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '60s' } as const;
const { loadBatch, batchFinalizing, finishBatch } = proxyLocalActivities<BatchLineActivities>({
  startToCloseTimeout: '10m',
  retry,
});
// A line may fail over through several candidates, each call up to 150 s.
const { runBatchLine } = proxyLocalActivities<BatchLineActivities>({ startToCloseTimeout: '10m', retry });

export async function batchRun(input: BatchRunInput): Promise<void> {
  const { batchId } = input;
  let progress: BatchProgress;
  let concurrency = input.concurrency;
  if (input.progress) {
    progress = input.progress;
  } else {
    const loaded = await loadBatch(batchId);
    // Validation failed: the batch says why (`errors`), and nothing ran.
    if (!loaded) return;
    concurrency = loaded.concurrency;
    progress = {
      total: loaded.total,
      next: 1,
      deferred: [],
      // A batch starts with a few lines in flight and grows by one per line answered, so that its first lines hear
      // the providers' limits (activities/routing/provider-headroom.ts) before it calls at full width. Runs begun
      // before (no marker) start at full width, as they did.
      window: patched('batch-slow-start') ? Math.min(concurrency, startWindow) : concurrency,
      saturatedRounds: 0,
      cancelled: false,
    };
  }
  const state = progress;
  setHandler(cancelBatchSignal, () => void (state.cancelled = true));
  let expired = Date.now() >= input.expiresAt;
  // The timer stops a batch that is waiting; a line started past the window finds it passed (runBatchLine) and is not
  // run, however late the timer's event reaches a workflow busy with its lines.
  if (!expired) void sleep(input.expiresAt - Date.now()).then(() => (expired = true));

  let running = 0;
  let started = 0;
  const wakesOnLineEnd = patched('batch-wake-on-line-end');
  const stopped = () => state.cancelled || expired;
  const due = () => state.deferred.length > 0 && state.deferred[0]!.notBefore <= Date.now();
  const fresh = () => state.next <= state.total;

  const run = async (line: number) => {
    running += 1;
    started += 1;
    try {
      const outcome = await runBatchLine({ batchId, line });
      if (outcome.outcome === 'no-capacity') {
        // The wait the provider named (a 429's Retry-After, the reset of the window its reserve is kept for), else the
        // back-off; a minute at most either way.
        const waitMs =
          outcome.retryAfterSeconds === undefined
            ? backoffMs(state.saturatedRounds)
            : Math.min(60_000, Math.max(1_000, outcome.retryAfterSeconds * 1_000));
        const notBefore = Date.now() + waitMs;
        state.saturatedRounds += 1;
        state.window = Math.max(1, Math.floor(state.window / 2));
        const at = state.deferred.findIndex((entry) => entry.notBefore > notBefore);
        state.deferred.splice(at === -1 ? state.deferred.length : at, 0, { line, notBefore });
      } else if (outcome.outcome === 'cancelled' || outcome.outcome === 'expired') {
        // Not run: it stays among the lines left (the error file names it).
        state.deferred.unshift({ line, notBefore: 0 });
        if (outcome.outcome === 'cancelled') state.cancelled = true;
        else expired = true;
      } else {
        state.saturatedRounds = 0;
        state.window = Math.min(concurrency, state.window + 1);
      }
    } finally {
      running -= 1;
    }
  };

  while (!stopped() && started < linesPerRun && !workflowInfo().continueAsNewSuggested) {
    if (running < state.window && (due() || fresh())) {
      // Lines that waited for capacity go first, oldest first; then the file's next line.
      void run(due() ? state.deferred.shift()!.line : state.next++);
      continue;
    }
    if (running === 0 && !fresh() && state.deferred.length === 0) break;
    const wake =
      running < state.window && state.deferred.length > 0
        ? Math.max(1, state.deferred[0]!.notBefore - Date.now())
        : undefined;
    // Woken by a stop, or as a line ends (then the loop looks again at what is due, and at when the next deferred line
    // is). Runs from before this wake (no marker) keep their older test, which missed a line ending while only
    // deferred lines were left: such a run waited for its timer, or for ever when none was set.
    const runningNow = running;
    const woken = wakesOnLineEnd
      ? () => stopped() || running < runningNow
      : () => stopped() || (running < state.window && fresh()) || (running === 0 && state.deferred.length === 0);
    await (wake === undefined ? condition(woken) : condition(woken, wake));
  }
  await condition(() => running === 0);
  if (!stopped() && (fresh() || state.deferred.length > 0)) {
    await continueAsNew<typeof batchRun>({ ...input, concurrency, progress: state });
  }

  const ending: BatchEnding = state.cancelled
    ? 'cancelled'
    : fresh() || state.deferred.length > 0
      ? 'expired'
      : 'completed';
  if (ending === 'completed') await batchFinalizing(batchId);
  await finishBatch({ batchId, ending });
}
