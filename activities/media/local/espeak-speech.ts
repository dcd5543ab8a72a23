/**
 * `espeak-ng`: local speech from eSpeak NG compiled to WebAssembly (`@echogarden/espeak-ng-emscripten`, voices and
 * dictionaries inside the package), encoded to MP3 (mono, 22.05 kHz, 64 kbps) with lamejs. Robotic but intelligible
 * English; the last fallback and the engine `npm start` uses without keys. Measured on this machine: loading takes
 * about 0.1 s, a short sentence about 20 ms, a 4,000-character text about 1 s of CPU: the work runs in a worker
 * thread of its own (espeak-worker.ts), killed and started again when a request passes its deadline.
 *
 * `speed` (0.25–4) scales eSpeak's 175 words per minute, clamped to 80–450, the range eSpeak NG accepts. Voices are
 * eSpeak NG's own (`en-us`, `en-gb`, `ja`, …); with no voice the language picks one. eSpeak NG reads Japanese kana
 * only: a kanji is spoken as "Chinese letter", so text with Han characters is refused rather than mangled.
 */
import { Worker } from 'node:worker_threads';
import { EngineError, type EngineOptions, type MediaFile, type SpeechEngine, type SpeechRequest } from '../engine.ts';
import type { EspeakReady, EspeakRequest, EspeakResponse } from './espeak-worker.ts';

const engine = 'espeak-ng';
const defaultWordsPerMinute = 175;
const minWordsPerMinute = 80;
const maxWordsPerMinute = 450;
const kbps = 64;
/** About 120 times faster than real time: 30 s covers far more text than a speech request may carry. */
const requestDeadlineMs = 30_000;
const startupDeadlineMs = 30_000;
const maxTextChars = 10_000;

interface Pending {
  resolve(response: EspeakResponse): void;
  timer: NodeJS.Timeout | undefined;
}

/** Maps the API's voice and language to an eSpeak NG voice. */
export function espeakVoice(request: Pick<SpeechRequest, 'voice' | 'language'>): string {
  const voice = request.voice.trim().toLowerCase();
  if (voice) return voice;
  return request.language?.toLowerCase().startsWith('ja') ? 'ja' : 'en-us';
}

/** eSpeak's words per minute for a speed factor. */
export function espeakRate(speed: number): number {
  const rate = Math.round(defaultWordsPerMinute * (Number.isFinite(speed) && speed > 0 ? speed : 1));
  return Math.min(maxWordsPerMinute, Math.max(minWordsPerMinute, rate));
}

export class EspeakSpeechEngine implements SpeechEngine {
  readonly id = engine;
  private worker: Worker | null = null;
  private ready: Promise<boolean> = Promise.resolve(false);
  private settleReady: (ready: boolean) => void = () => undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  /** Requests run one after another in the thread; each one's deadline starts when it reaches the thread. */
  private queue: Promise<unknown> = Promise.resolve();

  async speak(request: SpeechRequest, options: EngineOptions = {}): Promise<MediaFile & { durationSeconds: number }> {
    const text = request.text.trim();
    if (!text) throw new EngineError(engine, 'there is no text to speak', { retryable: false });
    if (text.length > maxTextChars) {
      throw new EngineError(engine, `the text is longer than ${maxTextChars} characters`, { retryable: false });
    }
    if (/\p{Script=Han}/u.test(text)) {
      throw new EngineError(engine, 'eSpeak NG cannot read kanji (Han characters); a hosted engine is needed', {
        retryable: false,
      });
    }
    const message = { text, voice: espeakVoice(request), rate: espeakRate(request.speed), kbps };
    const run = this.queue.then(() => this.run(message, options.signal));
    this.queue = run.catch(() => undefined);
    const response = await run;
    if (!response.ok) throw new EngineError(engine, response.error, { retryable: !response.badInput });
    return {
      bytes: response.mp3,
      contentType: 'audio/mpeg',
      durationSeconds: Math.round((response.samples / response.sampleRate) * 1000) / 1000,
    };
  }

  /** Ends the thread (tests, shutdown); the next request starts a new one. */
  async close(): Promise<void> {
    this.reset('the engine was closed');
  }

  private async run(message: Omit<EspeakRequest, 'id'>, signal: AbortSignal | undefined): Promise<EspeakResponse> {
    const id = this.nextId++;
    if (signal?.aborted) throw new EngineError(engine, 'the request was cancelled', { retryable: false });
    const worker = this.ensureWorker();
    if (!(await this.ready) || this.worker !== worker) {
      return { id, ok: false, error: 'eSpeak NG did not start', badInput: false };
    }
    return new Promise((resolve, reject) => {
      // Synchronous WebAssembly cannot be interrupted: past the deadline the thread is ended.
      const timer = setTimeout(
        () => this.reset(`speaking took longer than ${requestDeadlineMs / 1000} s`),
        requestDeadlineMs,
      );
      const onAbort = () => {
        this.pending.delete(id);
        clearTimeout(timer);
        reject(new EngineError(engine, 'the request was cancelled', { retryable: false }));
        // The thread finishes the text it is on; its answer is dropped.
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, {
        timer,
        resolve: (response) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(response);
        },
      });
      worker.postMessage({ id, ...message } satisfies EspeakRequest);
    });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./espeak-worker.ts', import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 16 },
    });
    worker.unref();
    this.ready = new Promise<boolean>((resolve) => (this.settleReady = resolve));
    const startup = setTimeout(() => {
      if (this.worker === worker) this.reset('eSpeak NG did not start');
    }, startupDeadlineMs);
    startup.unref();
    worker.on('message', (response: EspeakResponse | EspeakReady) => {
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
    worker.on('error', (error) => this.reset(error.message));
    worker.on('exit', () => {
      if (this.worker === worker) this.reset('eSpeak NG stopped');
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
      pending.resolve({ id, ok: false, error: reason, badInput: false });
    }
    this.pending.clear();
  }
}
