/**
 * CPU-heavy synchronous work (mathjs, eSpeak NG in WebAssembly) in a worker thread of its own, with a deadline per
 * call. Synchronous code cannot be interrupted from outside, so the only way to stop a runaway is to end its thread:
 * past a call's deadline, or when the thread crashes (an exception out of its event loop, its heap limit, an exit),
 * the thread is terminated, every call in it fails, and the next call starts a fresh thread.
 *
 * Both ends of the protocol are here. The thread's script loads what it needs, then calls `serveCalls(answer)`: that
 * posts `{ready: true}` and answers each `{id, request}` with `{id, response}`, or `{id, error}` when `answer` threw
 * (the thread lives on). `DeadlineWorker` on the caller's side starts the thread on first use, or ahead of calls
 * with `warm()` (then a thread ended by a deadline or a crash is replaced at once, so the next call finds one ready),
 * and waits for `ready` (under a startup deadline of its own) before a call's deadline starts: a slow start on a busy
 * machine is waited for, never counted against the work. Every failure is a `WorkerCallError` whose `kind` says
 * what happened.
 *
 * Each thread's listeners act only while it is the current one: a replaced thread's late error (its out-of-memory
 * error arriving after the deadline had already replaced it) or late deadline must not reset its successor.
 */
import { parentPort, Worker, workerData, type ResourceLimits, type Transferable } from 'node:worker_threads';

/** `threw`: the work itself threw; `deadline`: the call ran too long; `stopped`: the thread did not start, crashed,
 * exited or was closed; `cancelled`: the caller's signal aborted. */
export type WorkerCallKind = 'threw' | 'deadline' | 'stopped' | 'cancelled';

export class WorkerCallError extends Error {
  readonly kind: WorkerCallKind;
  constructor(kind: WorkerCallKind, message: string) {
    super(message);
    this.name = 'WorkerCallError';
    this.kind = kind;
  }
}

type FromThread<Response> = { ready: true } | { id: number; response: Response } | { id: number; error: string };

/**
 * The thread's side: answers the calls, after `ready`. Call it once the script has loaded. `answer` may return a
 * promise (an engine whose work is asynchronous, such as TensorFlow.js's graph execution): the answer is posted when
 * it settles; the caller's `oneAtATime` keeps such calls from overlapping.
 */
export function serveCalls<Request, Response>(
  answer: (request: Request) => Response | Promise<Response>,
  transfer: (response: Response) => Transferable[] = () => [],
): void {
  const port = parentPort;
  if (!port) throw new Error('serveCalls runs in a worker thread');
  const { startupDelayMs } = (workerData ?? {}) as { startupDelayMs?: number };
  if (startupDelayMs) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, startupDelayMs);
  const post = (message: FromThread<Response>, transferList: Transferable[] = []) =>
    port.postMessage(message, transferList);
  const fail = (id: number, error: unknown) =>
    post({ id, error: error instanceof Error ? error.message : String(error) });
  port.on('message', ({ id, request }: { id: number; request: Request }) => {
    try {
      const response = answer(request);
      if (response instanceof Promise) {
        response.then(
          (value) => post({ id, response: value }, transfer(value)),
          (error: unknown) => fail(id, error),
        );
      } else {
        post({ id, response }, transfer(response));
      }
    } catch (error) {
      fail(id, error);
    }
  });
  post({ ready: true });
}

export interface DeadlineWorkerOptions {
  script: URL;
  callDeadlineMs: number;
  startupDeadlineMs: number;
  resourceLimits?: ResourceLimits;
  /**
   * Calls wait for the one before them (each deadline starting when the call reaches the thread) instead of being
   * posted at once (then a runaway fails the calls queued behind it in the thread, and their deadlines include it).
   */
  oneAtATime?: boolean;
  /** Test seam: the thread sleeps this long before `ready`, a start-up as slow as on a very busy machine. */
  startupDelayMs?: number;
  /** The failures' messages, in the caller's words. `outOfMemory` replaces the heap limit's error, when given. */
  messages: { deadline: string; notStarted: string; stopped: string; outOfMemory?: string };
}

export interface CallOptions {
  /** An abort drops the call, not the thread: the thread finishes the work it is on and its answer is dropped. */
  signal?: AbortSignal;
}

interface Pending<Response> {
  resolve(response: Response): void;
  reject(error: WorkerCallError): void;
  timer: NodeJS.Timeout;
}

/** The caller's side: one thread, started on first use and replaced after a deadline or a crash. */
export class DeadlineWorker<Request, Response> {
  private readonly options: DeadlineWorkerOptions;
  private worker: Worker | null = null;
  /** Resolves true once the current thread is ready (false if it is reset first). */
  private ready: Promise<boolean> = Promise.resolve(false);
  private settleReady: (ready: boolean) => void = () => undefined;
  /** The current thread has said `ready`. */
  private isReady = false;
  /** Why the last thread ended before it was ready (its error, or the startup deadline), for the calls it fails. */
  private startFailure = '';
  /** Set by `warm()`: a thread is kept started, not only on demand. */
  private keepWarm = false;
  private nextId = 1;
  private readonly pending = new Map<number, Pending<Response>>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: DeadlineWorkerOptions) {
    this.options = options;
  }

  /** Runs one call in the thread; rejects with a `WorkerCallError`. */
  call(request: Request, options: CallOptions = {}): Promise<Response> {
    if (!this.options.oneAtATime) return this.run(request, options);
    const run = this.queue.then(() => this.run(request, options));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Starts the thread now, and from now on a new one as soon as a thread that had started is ended (a deadline, a
   * crash), so calls find one ready. Resolves true once the thread is ready (false if it did not start). A thread
   * that fails to start is not restarted in a loop: the next call tries again.
   */
  warm(): Promise<boolean> {
    this.keepWarm = true;
    this.ensureWorker();
    return this.ready;
  }

  /** Ends the thread (tests, shutdown) and the warm start; its calls fail with `reason`, the next call starts one. */
  close(reason: string): void {
    this.keepWarm = false;
    this.reset(reason);
  }

  private async run(request: Request, { signal }: CallOptions): Promise<Response> {
    const cancelled = () => new WorkerCallError('cancelled', 'the call was cancelled');
    if (signal?.aborted) throw cancelled();
    const worker = this.ensureWorker();
    const id = this.nextId++;
    if (!(await this.ready)) {
      const { notStarted } = this.options.messages;
      const why = this.startFailure && this.startFailure !== notStarted ? ` (${this.startFailure})` : '';
      throw new WorkerCallError('stopped', `${notStarted}${why}`);
    }
    if (this.worker !== worker) throw new WorkerCallError('stopped', this.options.messages.stopped);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this.worker === worker) this.reset(this.options.messages.deadline, 'deadline');
      }, this.options.callDeadlineMs);
      const onAbort = () => {
        this.pending.delete(id);
        clearTimeout(timer);
        reject(cancelled());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const settled = () => signal?.removeEventListener('abort', onAbort);
      this.pending.set(id, {
        timer,
        resolve: (response) => {
          settled();
          resolve(response);
        },
        reject: (error) => {
          settled();
          reject(error);
        },
      });
      worker.postMessage({ id, request });
    });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const { script, resourceLimits, startupDeadlineMs, startupDelayMs, messages } = this.options;
    const worker = new Worker(script, { resourceLimits, workerData: { startupDelayMs } });
    worker.unref();
    this.ready = new Promise<boolean>((resolve) => (this.settleReady = resolve));
    this.isReady = false;
    // Each listener acts only while its thread is the current one (see the file's comment).
    const current = () => this.worker === worker;
    const startup = setTimeout(() => {
      if (current()) this.reset(messages.notStarted);
    }, startupDeadlineMs);
    startup.unref();
    worker.on('message', (message: FromThread<Response>) => {
      if ('ready' in message) {
        clearTimeout(startup);
        if (!current()) return;
        this.isReady = true;
        this.settleReady(true);
        return;
      }
      const pending = this.pending.get(message.id);
      if (!pending) return;
      this.pending.delete(message.id);
      clearTimeout(pending.timer);
      if ('error' in message) pending.reject(new WorkerCallError('threw', message.error));
      else pending.resolve(message.response);
    });
    worker.on('error', (error: Error & { code?: string }) => {
      if (!current()) return;
      const outOfMemory = error.code === 'ERR_WORKER_OUT_OF_MEMORY' ? messages.outOfMemory : undefined;
      this.reset(outOfMemory ?? error.message);
    });
    worker.on('exit', () => {
      if (current()) this.reset(messages.stopped);
    });
    this.worker = worker;
    return worker;
  }

  private reset(reason: string, kind: WorkerCallKind = 'stopped'): void {
    const worker = this.worker;
    const replace = this.keepWarm && this.isReady;
    if (worker && !this.isReady) this.startFailure = reason;
    this.worker = null;
    this.isReady = false;
    this.settleReady(false);
    void worker?.terminate();
    for (const pending of this.pending.values()) {
      clearTimeout(pending.timer);
      pending.reject(new WorkerCallError(kind, reason));
    }
    this.pending.clear();
    if (replace) this.ensureWorker();
  }
}
