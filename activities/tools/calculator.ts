/**
 * `calculator`: evaluates a mathematical expression with mathjs: arithmetic, functions (sqrt, sin, log, …),
 * matrices, units and conversions (`5 km/h to m/s`), constants. The expression runs in a worker thread with a
 * 256 MiB heap and a 2-second deadline (calculator-worker.ts, run by threads/deadline-worker.ts): a runaway is killed
 * and the worker started again, so the calling process never stalls.
 *
 * The thread starts at the process's first calculation (or with the process, when ENGINES_WARM_AT_START names
 * `calculator`) and is kept warm from then on: started again at once after a runaway is killed, so a calculation does
 * not wait for mathjs to load (about 0.7 s on a quiet machine, over a second on a busy one). The 2 s count from when
 * the expression reaches the thread; a start-up is waited for, up to ENGINE_STARTUP_TIMEOUT_MS.
 */
import { z } from 'zod';
import { DeadlineWorker, WorkerCallError } from '../threads/deadline-worker.ts';
import { defineTool, ENGINE_STARTUP_TIMEOUT_MS, ToolError } from './tool.ts';
import type { CalculatorRequest } from './calculator-worker.ts';

const evaluationDeadlineMs = 2_000;

export interface CalculatorOptions {
  /** Test seam: the evaluator thread starts this much slower (see DeadlineWorkerOptions). */
  startupDelayMs?: number;
}

export function createCalculatorTool({ startupDelayMs }: CalculatorOptions = {}) {
  /** One evaluator thread for the process, kept warm (see `warm`) and replaced when killed. */
  const evaluator = new DeadlineWorker<CalculatorRequest, string>({
    startupDelayMs,
    script: new URL('./calculator-worker.ts', import.meta.url),
    callDeadlineMs: evaluationDeadlineMs,
    startupDeadlineMs: ENGINE_STARTUP_TIMEOUT_MS,
    // The old generation must stay well above the young one: the API and worker run with 64 MiB semi-spaces
    // (--max-semi-space-size=64, process-wide), and with an old generation of 128 MiB or less V8 then collected
    // the whole heap after every idle pause, about 50 ms of CPU per calculation (bench:chat found it).
    resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 16 },
    // One at a time: each deadline counts that expression alone, and a runaway fails no calculation queued behind
    // it (they run in the fresh thread).
    oneAtATime: true,
    messages: {
      deadline: `the calculation took longer than ${evaluationDeadlineMs / 1000} s`,
      notStarted: 'the calculator did not start',
      stopped: 'the calculator stopped',
      outOfMemory: 'the calculation ran out of memory',
    },
  });

  return defineTool({
    name: 'calculator',
    description:
      'Evaluates a mathematical expression exactly: arithmetic, powers, roots, trigonometry, logarithms, matrices, ' +
      'statistics, and units with conversions (e.g. "12 inch to cm", "sqrt(2) * 3^4", "mean([3, 5, 8])").',
    input: z.object({
      expression: z.string().min(1).max(1_000).describe('The expression, in mathjs syntax'),
    }),
    // A backstop: the start-up bound, then the deadline with room for calculations queued ahead.
    timeoutMs: ENGINE_STARTUP_TIMEOUT_MS + 10_000,
    retry: { maximumAttempts: 1, initialIntervalMs: 0 },
    maxOutputChars: 2_000,
    configured: () => true,
    warm: async (settings) => {
      if (!settings.enginesWarmAtStart?.includes('calculator')) return;
      if (!(await evaluator.warm())) throw new Error('the calculator did not start');
    },
    async run({ expression }) {
      void evaluator.warm();
      try {
        return { expression, result: await evaluator.call({ expression }) };
      } catch (error) {
        if (!(error instanceof WorkerCallError)) throw error;
        throw new ToolError(`cannot evaluate "${expression}": ${error.message}`);
      }
    },
  });
}

export const calculatorTool = createCalculatorTool();
