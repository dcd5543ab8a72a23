/**
 * `calculator`: evaluates a mathematical expression with mathjs: arithmetic, functions (sqrt, sin, log, …),
 * matrices, units and conversions (`5 km/h to m/s`), constants. The expression runs in a worker thread with a
 * 256 MiB heap and a 2-second deadline (calculator-worker.ts): a runaway is killed and the worker started again,
 * so the calling process never stalls.
 */
import { Worker } from 'node:worker_threads';
import { z } from 'zod';
import { defineTool, ToolError } from './tool.ts';
import type { CalculatorRequest, CalculatorResponse } from './calculator-worker.ts';

const evaluationDeadlineMs = 2_000;

interface Pending {
  resolve(response: CalculatorResponse): void;
  timer: NodeJS.Timeout;
}

/** One evaluator thread for the process, started on first use and replaced when killed. */
class Evaluator {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  evaluate(expression: string): Promise<CalculatorResponse> {
    const worker = this.ensureWorker();
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        // A deadline passed: nothing short of ending the thread stops synchronous work. Every call in it fails.
        this.reset(`the calculation took longer than ${evaluationDeadlineMs / 1000} s`);
      }, evaluationDeadlineMs);
      this.pending.set(id, { resolve, timer });
      worker.postMessage({ id, expression } satisfies CalculatorRequest);
    });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./calculator-worker.ts', import.meta.url), {
      // The old generation must stay well above the young one: the API and worker run with 64 MiB semi-spaces
      // (--max-semi-space-size=64, process-wide), and with an old generation of 128 MiB or less V8 then collected
      // the whole heap after every idle pause, about 50 ms of CPU per calculation (bench:chat found it).
      resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 16 },
    });
    worker.unref();
    worker.on('message', (response: CalculatorResponse) => {
      const pending = this.pending.get(response.id);
      if (!pending) return;
      this.pending.delete(response.id);
      clearTimeout(pending.timer);
      pending.resolve(response);
    });
    worker.on('error', (error) =>
      this.reset(error.message.includes('memory') ? 'the calculation ran out of memory' : error.message),
    );
    worker.on('exit', () => {
      if (this.worker === worker) this.reset('the calculator stopped');
    });
    this.worker = worker;
    return worker;
  }

  private reset(reason: string): void {
    const worker = this.worker;
    this.worker = null;
    void worker?.terminate();
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.resolve({ id, ok: false, error: reason });
    }
    this.pending.clear();
  }
}

const evaluator = new Evaluator();

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
    const response = await evaluator.evaluate(expression);
    if (!response.ok) throw new ToolError(`cannot evaluate "${expression}": ${response.error}`);
    return { expression, result: response.result };
  },
});
