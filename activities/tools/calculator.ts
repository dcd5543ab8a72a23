/**
 * `calculator`: evaluates a mathematical expression with mathjs: arithmetic, functions (sqrt, sin, log, …),
 * matrices, units and conversions (`5 km/h to m/s`), constants. The expression runs in a worker thread with a
 * 256 MiB heap and a 2-second deadline (calculator-worker.ts): a runaway is killed and the worker started again,
 * so the calling process never stalls.
 */
import { Worker } from 'node:worker_threads';
import { z } from 'zod';
import { defineTool, ToolError } from './tool.ts';
import type { CalculatorReady, CalculatorRequest, CalculatorResponse } from './calculator-worker.ts';

const evaluationDeadlineMs = 2_000;
/** Loading mathjs in a new thread takes about 0.3 s on an idle core; much longer means something is wrong. */
const startupDeadlineMs = 30_000;

interface Pending {
  resolve(response: CalculatorResponse): void;
  timer: NodeJS.Timeout;
}

/** One evaluator thread for the process, started on first use and replaced when killed. */
class Evaluator {
  private worker: Worker | null = null;
  /** Resolves true once the current thread has loaded mathjs (false if it is reset first). */
  private ready: Promise<boolean> = Promise.resolve(false);
  private settleReady: (ready: boolean) => void = () => undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  async evaluate(expression: string): Promise<CalculatorResponse> {
    const worker = this.ensureWorker();
    const id = this.nextId++;
    // The deadline is the calculation's own: a thread still loading (a cold start on a busy machine) is waited for.
    if (!(await this.ready)) return { id, ok: false, error: 'the calculator did not start' };
    if (this.worker !== worker) return { id, ok: false, error: 'the calculator stopped' };
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        // A deadline passed: nothing short of ending the thread stops synchronous work. Every call in it fails.
        if (this.worker === worker) this.reset(`the calculation took longer than ${evaluationDeadlineMs / 1000} s`);
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
    this.ready = new Promise<boolean>((resolve) => (this.settleReady = resolve));
    const startup = setTimeout(() => {
      if (this.worker === worker) this.reset('the calculator did not start');
    }, startupDeadlineMs);
    startup.unref();
    worker.on('message', (response: CalculatorResponse | CalculatorReady) => {
      if ('ready' in response) {
        clearTimeout(startup);
        this.settleReady(true);
        return;
      }
      const pending = this.pending.get(response.id);
      if (!pending) return;
      this.pending.delete(response.id);
      clearTimeout(pending.timer);
      pending.resolve(response);
    });
    // A thread's late error (out of memory after it was already replaced) must not reset its successor.
    worker.on('error', (error) => {
      if (this.worker === worker) {
        this.reset(error.message.includes('memory') ? 'the calculation ran out of memory' : error.message);
      }
    });
    worker.on('exit', () => {
      if (this.worker === worker) this.reset('the calculator stopped');
    });
    this.worker = worker;
    return worker;
  }

  private reset(reason: string): void {
    const worker = this.worker;
    this.worker = null;
    this.settleReady(false);
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
