/**
 * Splitting text into the chunks the RAG index embeds and search returns (docs/files-and-rag.md).
 *
 * Prose is split at sentence boundaries (`Intl.Segmenter`, the Unicode sentence rules, every language the runtime
 * knows), and sentences are packed into chunks of at most `targetChars`; each chunk after the first of a unit starts
 * with the last sentences of the one before, up to `overlapChars`, so a passage cut at a chunk's end is still whole in
 * the next. A sentence longer than a chunk is cut at word boundaries (never inside a word where one fits). Chunks
 * never cross a unit (a PDF page, a sheet): their location is exact.
 *
 * Tables (CSV, sheets) are split at row boundaries: each chunk holds whole rows, written `column: value; …` so the
 * header travels with every row, and repeats the previous chunk's last row as its overlap. A chunk's location is the
 * range of rows it holds (1-based, the header being row 1, as a spreadsheet numbers them).
 */

export interface ChunkingOptions {
  /** Characters a chunk holds at most (a little over one with a single long word). */
  targetChars: number;
  /** Characters of the previous chunk's end repeated at a chunk's start. */
  overlapChars: number;
}

/** About 300 tokens a chunk, 60 of overlap: small enough to cite precisely, large enough to hold a thought. */
export const defaultChunking: ChunkingOptions = { targetChars: 1_200, overlapChars: 240 };

const sentences = new Intl.Segmenter('en', { granularity: 'sentence' });
const words = new Intl.Segmenter('en', { granularity: 'word' });

/** The chunks of one unit of prose (a page, a text). Whitespace is collapsed; empty text has no chunks. */
export function chunkProse(text: string, options: ChunkingOptions = defaultChunking): string[] {
  const pieces = [...sentences.segment(text)]
    .map((segment) => segment.segment.replace(/\s+/g, ' ').trim())
    .filter(Boolean)
    .flatMap((sentence) =>
      sentence.length > options.targetChars ? splitLong(sentence, options.targetChars) : [sentence],
    );
  const chunks: string[] = [];
  let current: string[] = [];
  let length = 0;
  /** Sentences of `current` since the last chunk was closed (the overlap does not count as new text). */
  let fresh = 0;
  for (const piece of pieces) {
    if (length > 0 && length + 1 + piece.length > options.targetChars) {
      chunks.push(current.join(' '));
      current = overlapOf(current, options.overlapChars, options.targetChars - piece.length - 1);
      length = current.reduce((sum, sentence) => sum + sentence.length + 1, -1);
      if (length < 0) length = 0;
      fresh = 0;
    }
    current.push(piece);
    length += (length > 0 ? 1 : 0) + piece.length;
    fresh++;
  }
  if (fresh > 0) chunks.push(current.join(' '));
  return chunks;
}

/** The last sentences of a chunk that fit in `overlapChars` (and leave room for the next sentence). */
function overlapOf(sentencesOfChunk: string[], overlapChars: number, room: number): string[] {
  const kept: string[] = [];
  let length = 0;
  for (let index = sentencesOfChunk.length - 1; index >= 0; index--) {
    const sentence = sentencesOfChunk[index]!;
    if (length + sentence.length > Math.min(overlapChars, room)) break;
    kept.unshift(sentence);
    length += sentence.length + 1;
  }
  return kept;
}

/** A sentence longer than a chunk, cut at word boundaries into pieces of at most `maximum` characters. */
function splitLong(sentence: string, maximum: number): string[] {
  const pieces: string[] = [];
  let current = '';
  for (const { segment } of words.segment(sentence)) {
    if (current.length + segment.length > maximum && current.trim() !== '') {
      pieces.push(current.trim());
      current = '';
    }
    // A single "word" longer than a chunk (a URL, a base64 blob) is cut where it must be.
    let rest = segment;
    while (rest.length > maximum) {
      pieces.push(rest.slice(0, maximum));
      rest = rest.slice(maximum);
    }
    current += rest;
  }
  if (current.trim() !== '') pieces.push(current.trim());
  return pieces;
}

/** A table's rows as chunks: whole rows, `header: value; …`, with the rows each holds (1-based, header row 1). */
export interface RowChunk {
  text: string;
  /** First and last data row held, numbered as the sheet numbers them (the header is row 1). */
  rows: [number, number];
}

/**
 * Packs table rows into chunks. Feed rows in order with `add`; `flush` ends the table. Each closed chunk is handed to
 * `emit` at once, so a large table is never held whole.
 */
export class RowChunker {
  private readonly header: string[];
  private readonly options: ChunkingOptions;
  private readonly emit: (chunk: RowChunk) => void;
  private current: Array<{ line: string; row: number }> = [];
  private length = 0;
  private fresh = 0;

  constructor(header: string[], emit: (chunk: RowChunk) => void, options: ChunkingOptions = defaultChunking) {
    this.header = header.map((name, index) => (name.trim() === '' ? `column ${index + 1}` : name.trim()));
    this.emit = emit;
    this.options = options;
  }

  /** One data row, with its row number in the sheet. */
  add(values: unknown[], row: number): void {
    const line = this.header
      .map((name, index) => `${name}: ${formatCell(values[index])}`)
      .concat(
        values
          .slice(this.header.length)
          .map((value, index) => `column ${this.header.length + index + 1}: ${formatCell(value)}`),
      )
      .join('; ');
    if (this.length > 0 && this.length + 1 + line.length > this.options.targetChars) this.close();
    this.current.push({ line, row });
    this.length += (this.length > 0 ? 1 : 0) + line.length;
    this.fresh++;
  }

  flush(): void {
    if (this.fresh > 0) this.close(false);
  }

  private close(keepOverlap = true): void {
    const first = this.current[0]!.row;
    const last = this.current.at(-1)!.row;
    this.emit({ text: this.current.map((entry) => entry.line).join('\n'), rows: [first, last] });
    // The last row again, as the next chunk's overlap, when it is short enough to leave room.
    const tail = this.current.at(-1)!;
    this.current = keepOverlap && tail.line.length <= this.options.overlapChars ? [tail] : [];
    this.length = this.current.length ? tail.line.length : 0;
    this.fresh = 0;
  }
}

function formatCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) return value.toISOString().replace('T00:00:00.000Z', '');
  if (typeof value === 'object') {
    const cell = value as { text?: unknown; result?: unknown; richText?: Array<{ text: string }> };
    if (cell.richText) return cell.richText.map((part) => part.text).join('');
    if (cell.text !== undefined) return String(cell.text);
    if (cell.result !== undefined) return formatCell(cell.result);
    return JSON.stringify(value);
  }
  return String(value).replace(/\s+/g, ' ').trim();
}
