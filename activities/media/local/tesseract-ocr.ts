/**
 * `tesseract`: local OCR with tesseract.js 7 (Tesseract 5 in WebAssembly, in worker threads of its own) and the
 * LSTM models of `@tesseract.js-data/eng` and `@tesseract.js-data/jpn` (the `4.0.0_best_int` files shipped inside
 * the packages). `langPath` points at the package directory and the cache is off, so a worker never reaches a CDN
 * and never writes `*.traineddata` into the working directory.
 *
 * One long-lived Tesseract worker per language, created on first use (loading takes about a second) and reused;
 * jobs for a language queue in it. The input is decoded by sharp first (PNG, JPEG, WebP or GIF, the first frame) and
 * handed over as a grayscale PNG; inputs above 25 megapixels are refused. A recognition that takes longer than 60 s
 * ends its worker (the next request starts a new one) and fails as retryable.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import sharp, { type Metadata } from 'sharp';
import type { Worker as TesseractWorker } from 'tesseract.js';
import { EngineError, type EngineOptions, type MediaFile, type OcrEngine } from '../engine.ts';
import { maxInputPixels } from './media-input.ts';

const engine = 'tesseract';
const recognizeDeadlineMs = 60_000;
const require = createRequire(import.meta.url);

/** The spec's `en` and `ja` (and Tesseract's own codes) to a Tesseract language. */
const languages: Record<string, 'eng' | 'jpn'> = { en: 'eng', eng: 'eng', ja: 'jpn', jpn: 'jpn' };

export function tesseractLanguage(language: string): 'eng' | 'jpn' | null {
  const code = language.trim().toLowerCase().split(/[-_]/)[0] ?? '';
  return languages[code] ?? null;
}

function langPath(language: 'eng' | 'jpn'): string {
  return join(dirname(require.resolve(`@tesseract.js-data/${language}/package.json`)), '4.0.0_best_int');
}

export interface OcrResult {
  text: string;
  confidence: number;
  words: Array<{ text: string; confidence: number }>;
}

export class TesseractOcrEngine implements OcrEngine {
  readonly id = engine;
  private readonly workers = new Map<'eng' | 'jpn', Promise<TesseractWorker>>();

  async recognize(image: MediaFile, request: { language: string }, options: EngineOptions = {}): Promise<OcrResult> {
    const language = tesseractLanguage(request.language);
    if (!language) {
      throw new EngineError(engine, `no model for the language "${request.language}" (en and ja are available)`, {
        retryable: false,
      });
    }
    const png = await decode(image.bytes);
    if (options.signal?.aborted) throw new EngineError(engine, 'the request was cancelled', { retryable: false });
    const worker = await this.worker(language);
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        // A job cannot be cancelled inside Tesseract: the worker is ended, and the next request starts another.
        void this.discard(language, worker);
        reject(
          new EngineError(engine, `recognition took longer than ${recognizeDeadlineMs / 1000} s`, { retryable: true }),
        );
      }, recognizeDeadlineMs);
      onAbort = () => reject(new EngineError(engine, 'the request was cancelled', { retryable: false }));
      options.signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const { data } = await Promise.race([worker.recognize(png, {}, { text: true, blocks: true }), stopped]);
      const words = (data.blocks ?? [])
        .flatMap((block) => block.paragraphs)
        .flatMap((paragraph) => paragraph.lines)
        .flatMap((line) => line.words)
        .map((word) => ({ text: word.text, confidence: round(word.confidence / 100) }));
      const text = language === 'jpn' ? joinJapanese(data.text) : data.text;
      return { text: text.trim(), confidence: round(data.confidence / 100), words };
    } catch (error) {
      if (error instanceof EngineError) throw error;
      throw new EngineError(engine, `recognition failed: ${String(error)}`, { retryable: true, cause: error });
    } finally {
      clearTimeout(timer);
      if (onAbort) options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Ends the workers (tests, shutdown); the next request starts new ones. */
  async close(): Promise<void> {
    const workers = [...this.workers.entries()];
    this.workers.clear();
    await Promise.all(
      workers.map(([, worker]) => worker.then((started) => started.terminate()).catch(() => undefined)),
    );
  }

  private worker(language: 'eng' | 'jpn'): Promise<TesseractWorker> {
    let worker = this.workers.get(language);
    if (!worker) {
      // tesseract.js is imported with the first OCR job, not at the process's start (issue 29).
      worker = import('tesseract.js')
        .then(({ createWorker, OEM }) =>
          createWorker(language, OEM.LSTM_ONLY, {
            langPath: langPath(language),
            gzip: true,
            // No cache: nothing read from or written to the working directory; the packaged file is read each start.
            cacheMethod: 'none',
          }),
        )
        .then(async (started) => {
          // Screenshots and rendered images carry no or odd resolutions (72, 25 dpi); Tesseract is tuned for 300.
          await started.setParameters({ user_defined_dpi: '300' });
          return started;
        });
      this.workers.set(language, worker);
      worker.catch(() => {
        if (this.workers.get(language) === worker) this.workers.delete(language);
      });
    }
    return worker.catch((error: unknown) => {
      throw new EngineError(engine, `Tesseract did not start: ${String(error)}`, { retryable: true, cause: error });
    });
  }

  private async discard(language: 'eng' | 'jpn', worker: TesseractWorker): Promise<void> {
    const current = this.workers.get(language);
    if (current && (await current.catch(() => null)) === worker) this.workers.delete(language);
    await worker.terminate().catch(() => undefined);
  }
}

/** Any accepted image to the grayscale PNG Tesseract reads best; too large or undecodable inputs are refused. */
async function decode(bytes: Uint8Array): Promise<Buffer> {
  let metadata: Metadata;
  try {
    metadata = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (error) {
    throw new EngineError(engine, 'the image could not be decoded', { retryable: false, cause: error });
  }
  const pixels = (metadata.width ?? 0) * (metadata.height ?? 0);
  if (!pixels) throw new EngineError(engine, 'the image has no pixels', { retryable: false });
  if (pixels > maxInputPixels) {
    throw new EngineError(engine, `the image has ${metadata.width}x${metadata.height} pixels, above 25 megapixels`, {
      retryable: false,
    });
  }
  try {
    // Transparent pixels become white (text is usually dark on a light page), then gray.
    return await sharp(bytes, { limitInputPixels: maxInputPixels })
      .flatten({ background: '#ffffff' })
      .grayscale()
      .png()
      .toBuffer();
  } catch (error) {
    throw new EngineError(engine, 'the image could not be decoded', { retryable: false, cause: error });
  }
}

/** Tesseract's jpn model puts a space between characters (`十 三 日`); Japanese is written without them. */
function joinJapanese(text: string): string {
  return text.replace(
    /(?<=[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}ー、。]) +(?=[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}ー、。])/gu,
    '',
  );
}

function round(value: number): number {
  return Math.round(Math.max(0, Math.min(1, value)) * 1000) / 1000;
}
