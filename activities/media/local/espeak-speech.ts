/**
 * `espeak-ng`: local speech from eSpeak NG compiled to WebAssembly (`@echogarden/espeak-ng-emscripten`, voices and
 * dictionaries inside the package), encoded to MP3 (mono, 22.05 kHz, 64 kbps) with lamejs. Robotic but intelligible
 * English; the last fallback and the engine `npm start` uses without keys. Measured on this machine: loading takes
 * about 0.1 s, a short sentence about 20 ms, a 4,000-character text about 1 s of CPU: the work runs in a worker
 * thread of its own (espeak-worker.ts, run by threads/deadline-worker.ts), killed and started again when a request
 * passes its deadline or the thread crashes.
 *
 * `speed` (0.25–4) scales eSpeak's 175 words per minute, clamped to 80–450, the range eSpeak NG accepts. Voices are
 * eSpeak NG's own (`en-us`, `en-gb`, `ja`, …); with no voice the language picks one. eSpeak NG reads Japanese kana
 * only: a kanji is spoken as "Chinese letter", so text with Han characters is refused rather than mangled.
 */
import { DeadlineWorker, WorkerCallError } from '../../threads/deadline-worker.ts';
import { EngineError, type EngineOptions, type MediaFile, type SpeechEngine, type SpeechRequest } from '../engine.ts';
import type { EspeakRequest, EspeakResponse } from './espeak-worker.ts';

const engine = 'espeak-ng';
const defaultWordsPerMinute = 175;
const minWordsPerMinute = 80;
const maxWordsPerMinute = 450;
const kbps = 64;
/** About 120 times faster than real time: 30 s covers far more text than a speech request may carry. */
const requestDeadlineMs = 30_000;
const startupDeadlineMs = 30_000;
const maxTextChars = 10_000;

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
  private readonly thread = new DeadlineWorker<EspeakRequest, EspeakResponse>({
    script: new URL('./espeak-worker.ts', import.meta.url),
    // Synchronous WebAssembly cannot be interrupted: past the deadline the thread is ended.
    callDeadlineMs: requestDeadlineMs,
    startupDeadlineMs,
    resourceLimits: { maxOldGenerationSizeMb: 256, maxYoungGenerationSizeMb: 16 },
    // Requests run one after another in the thread; each one's deadline starts when it reaches the thread.
    oneAtATime: true,
    messages: {
      deadline: `speaking took longer than ${requestDeadlineMs / 1000} s`,
      notStarted: 'eSpeak NG did not start',
      stopped: 'eSpeak NG stopped',
    },
  });

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
    let response: EspeakResponse;
    try {
      response = await this.thread.call(message, { signal: options.signal });
    } catch (error) {
      if (!(error instanceof WorkerCallError)) throw error;
      if (error.kind === 'cancelled') throw new EngineError(engine, 'the request was cancelled', { retryable: false });
      // The thread's trouble (a deadline, a crash, an exception), not the request's: another try may work.
      throw new EngineError(engine, error.message, { retryable: true });
    }
    // A refusal the thread answers (an unknown voice, no audio) is the request's.
    if (!response.ok) throw new EngineError(engine, response.error, { retryable: false });
    return {
      bytes: response.mp3,
      contentType: 'audio/mpeg',
      durationSeconds: Math.round((response.samples / response.sampleRate) * 1000) / 1000,
    };
  }

  /** Ends the thread (tests, shutdown); the next request starts a new one. */
  async close(): Promise<void> {
    this.thread.close('the engine was closed');
  }
}
