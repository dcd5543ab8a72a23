/**
 * `calculator`: evaluates a mathematical expression with mathjs: arithmetic, functions (sqrt, sin, log, …),
 * matrices, units and conversions (`5 km/h to m/s`), constants. The expression runs in a worker thread with a
 * 256 MiB heap and a 2-second deadline (calculator-worker.ts, run by threads/deadline-worker.ts): a runaway is killed
 * and the worker started again, so the calling process never stalls.
 */
import { z } from 'zod';
import { DeadlineWorker, WorkerCallError } from '../threads/deadline-worker.ts';
import { defineTool, ToolError } from './tool.ts';
import type { CalculatorRequest } from './calculator-worker.ts';

const evaluationDeadlineMs = 2_000;

/** One evaluator thread for the process, started on first use and replaced when killed. */
const evaluator = new DeadlineWorker<CalculatorRequest, string>({
  script: new URL('./calculator-worker.ts', import.meta.url),
  callDeadlineMs: evaluationDeadlineMs,
  // Loading mathjs in a new thread takes about 0.3 s on an idle core; much longer means something is wrong.
  startupDeadlineMs: 30_000,
  // The old generation must stay well above the young one: the API and worker run with 64 MiB semi-spaces
  // (--max-semi-space-size=64, process-wide), and with an old generation of 128 MiB or less V8 then collected
  // the whole heap after every idle pause, about 50 ms of CPU per calculation (bench:chat found it).
  resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 16 },
  // Calls are posted at once: a runaway fails every calculation waiting behind it in the thread.
  messages: {
    deadline: `the calculation took longer than ${evaluationDeadlineMs / 1000} s`,
    notStarted: 'the calculator did not start',
    stopped: 'the calculator stopped',
    outOfMemory: 'the calculation ran out of memory',
  },
});

export const calculatorTool = defineTool({
  name: 'calculator',
  description:
    'Evaluates a mathematical expression exactly: arithmetic, powers, roots, trigonometry, logarithms, matrices, ' +
    'statistics, and units with conversions (e.g. "12 inch to cm", "sqrt(2) * 3^4", "mean([3, 5, 8])").',
  input: z.object({
    expression: z.string().min(1).max(1_000).describe('The expression, in mathjs syntax'),
  }),
  timeoutMs: 5_000,
  retry: { maximumAttempts: 1, initialIntervalMs: 0 },
  maxOutputChars: 2_000,
  configured: () => true,
  async run({ expression }) {
    try {
      return { expression, result: await evaluator.call({ expression }) };
    } catch (error) {
      if (!(error instanceof WorkerCallError)) throw error;
      throw new ToolError(`cannot evaluate "${expression}": ${error.message}`);
    }
  },
});
