/**
 * What the RAG index reads out of an upload, chunked (./chunking.ts) with each chunk's position and location:
 *
 * - **PDF**: the text layer, page by page (pdf.js in a worker thread with a heap limit and a deadline per call:
 *   ./pdf-text-worker.ts). A page's chunks stay on their page; position = page × 1,000 + chunk. A scanned PDF (no text
 *   layer) has no chunks: the index says so rather than guess (OCR of PDF pages is not done).
 * - **CSV, xlsx**: rows with their header, whole rows per chunk (the table readers of activities/uploads/
 *   table-rows.ts, which the table import uses too); position = the chunk's number.
 * - **Images**: their text, read by local Tesseract in the language asked (en or ja; the media API's standard OCR
 *   tier, activities/media/); position = chunk number.
 * - **Text** given directly: position = chunk number.
 */
import { DeadlineWorker, WorkerCallError } from '../threads/deadline-worker.ts';
import type { OcrEngine } from '../media/engine.ts';
import { withFallback, type EngineBreaker } from '../media/fallback.ts';
import type { OpenedUpload } from '../uploads/upload-store.ts';
import { readWhole } from '../uploads/upload-store.ts';
import { tableRows } from '../uploads/table-rows.ts';
import { chunkProse, RowChunker, type ChunkingOptions, defaultChunking } from './chunking.ts';
import type { NewChunk } from './rag-store.ts';
import type { PdfTextRequest, PdfTextResponse } from './pdf-text-worker.ts';

/** Chunks a PDF page may hold (its positions are page × this + chunk). */
export const chunksPerPage = 1_000;

/** Why a source cannot be indexed (the index ends failed with this message; retrying would not help). */
export class ExtractionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExtractionError';
  }
}

const pdfText = new DeadlineWorker<PdfTextRequest, PdfTextResponse>({
  script: new URL('./pdf-text-worker.ts', import.meta.url),
  // A page range of a hostile PDF that takes this long is a runaway; ordinary ones take milliseconds a page.
  callDeadlineMs: 120_000,
  startupDeadlineMs: 120_000,
  oneAtATime: true,
  resourceLimits: { maxOldGenerationSizeMb: 768 },
  messages: {
    deadline: 'reading the PDF took longer than 2 minutes',
    notStarted: 'the PDF reader did not start',
    stopped: 'the PDF reader stopped',
    outOfMemory: 'the PDF needs more memory than a PDF may take to read',
  },
});

async function readPdf(bytes: Uint8Array, from?: number, to?: number): Promise<PdfTextResponse> {
  try {
    // A copy per call: the bytes are transferred to the thread by structured clone.
    return await pdfText.call({ bytes, ...(from !== undefined ? { from, to } : {}) });
  } catch (error) {
    if (error instanceof WorkerCallError && error.kind === 'threw') {
      throw new ExtractionError(`the PDF cannot be read: ${error.message}`);
    }
    if (error instanceof WorkerCallError && error.kind === 'deadline') throw new ExtractionError(error.message);
    throw error;
  }
}

/** A PDF's page count. */
export async function pdfPageCount(upload: OpenedUpload): Promise<number> {
  return (await readPdf(await readWhole(upload))).pages;
}

/** The chunks of pages `from`..`to` (1-based, inclusive) of a PDF. */
export async function pdfChunks(
  upload: OpenedUpload,
  from: number,
  to: number,
  options: ChunkingOptions = defaultChunking,
): Promise<NewChunk[]> {
  const { texts } = await readPdf(await readWhole(upload), from, to);
  return texts.flatMap(({ page, text }) =>
    chunkProse(text, options)
      .slice(0, chunksPerPage)
      .map((chunk, index) => ({ seq: page * chunksPerPage + index, text: chunk, location: { kind: 'page', page } })),
  );
}

/** The text of a PDF's pages from `from` on, until about `maxChars` (at least one page), and its page count. */
export async function pdfPageText(
  upload: OpenedUpload,
  from: number,
  maxChars: number,
): Promise<{ pages: number; texts: Array<{ page: number; text: string }> }> {
  return pdfBytesText(await readWhole(upload), from, maxChars);
}

/**
 * The same from a PDF's bytes (a file read from Google Drive, say): pages from `from` on, until about `maxChars`.
 * Throws `ExtractionError` for a PDF that cannot be read.
 */
export async function pdfBytesText(
  bytes: Uint8Array,
  from: number,
  maxChars: number,
): Promise<{ pages: number; texts: Array<{ page: number; text: string }> }> {
  const { pages } = await readPdf(bytes);
  const texts: Array<{ page: number; text: string }> = [];
  let length = 0;
  // Ten pages a call: a page is a few thousand characters at most, so one or two calls fill `maxChars`.
  for (let start = Math.max(1, from); start <= pages && length < maxChars; start += 10) {
    const { texts: read } = await readPdf(bytes, start, Math.min(pages, start + 9));
    for (const page of read) {
      if (texts.length > 0 && length + page.text.length > maxChars) return { pages, texts };
      texts.push(page);
      length += page.text.length;
    }
  }
  return { pages, texts };
}

/**
 * A table's chunks, streamed: `emit` receives them in order, a batch at a time (the caller writes each batch before
 * the next is read, so a large file is never held whole). Bad rows (a malformed record) are skipped and counted.
 */
export async function tableChunks(
  upload: OpenedUpload,
  emit: (chunks: NewChunk[]) => Promise<void>,
  options: ChunkingOptions = defaultChunking,
  batchSize = 200,
): Promise<{ chunks: number; rows: number; badRows: number }> {
  let pending: NewChunk[] = [];
  let seq = 0;
  let rows = 0;
  let badRows = 0;
  let chunker: RowChunker | null = null;
  let sheet: string | undefined;
  const flush = async () => {
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    await emit(batch);
  };
  for await (const row of tableRows(upload)) {
    if ('error' in row) {
      badRows++;
      continue;
    }
    if (!chunker || row.sheet !== sheet) {
      chunker?.flush();
      sheet = row.sheet;
      const sheetName = row.sheet;
      chunker = new RowChunker(
        row.values,
        (chunk) => {
          pending.push({
            seq: seq++,
            text: chunk.text,
            location: { kind: 'rows', rows: chunk.rows, ...(sheetName !== undefined ? { sheet: sheetName } : {}) },
          });
        },
        options,
      );
      continue;
    }
    chunker.add(row.values, row.line);
    rows++;
    if (pending.length >= batchSize) await flush();
  }
  chunker?.flush();
  await flush();
  if (!chunker) throw new ExtractionError('the table is empty');
  return { chunks: seq, rows, badRows };
}

/** An image's text (OCR with engine fallback), chunked. */
export async function imageChunks(
  upload: OpenedUpload,
  ocr: { engines: readonly OcrEngine[]; breaker: EngineBreaker; language: string },
  options: ChunkingOptions = defaultChunking,
): Promise<NewChunk[]> {
  const bytes = await readWhole(upload);
  const { result } = await withFallback(
    ocr.engines,
    (engine) => engine.recognize({ bytes, contentType: upload.contentType }, { language: ocr.language }),
    ocr.breaker,
  );
  return textChunks(result.text, 'image', options);
}

/** Plain text, chunked. */
export function textChunks(text: string, kind: 'text' | 'image' = 'text', options = defaultChunking): NewChunk[] {
  return chunkProse(text, options).map((chunk, index) => ({ seq: index, text: chunk, location: { kind } }));
}
