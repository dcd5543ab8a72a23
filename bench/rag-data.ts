/**
 * The documents and texts `npm run bench:rag` works on, made in the bench from a fixed seed, so every run indexes and
 * searches the same things: business prose (sentences of subjects, verbs, topic nouns and figures; each document
 * dwells on a few topics of its own, so its chunks resemble each other more than other documents' do, as real files'
 * chunks do), a 300-page PDF of it (pdfkit, as the tests make PDFs), sales tables as CSV files written as a stream,
 * and search queries whose words come from one chunk (so each has a near neighbour, as a real question about a file
 * has). English words throughout: the local engine (Universal Sentence Encoder Lite) reads English.
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pdfWith } from '../test/helpers/documents.ts';

/** A seeded pseudo-random generator (mulberry32): the same sequence on every run and machine. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

const subjects = [
  'The committee',
  'Our supplier',
  'The regional office',
  'Each team',
  'The auditor',
  'The customer',
  'The board',
  'The warehouse manager',
  'The finance department',
  'The project lead',
  'The legal team',
  'Our partner in Osaka',
  'The sales group',
  'The support desk',
  'The planning office',
  'The operations director',
  'The quality team',
  'The procurement unit',
  'The research group',
  'The site engineer',
];
const verbs = [
  'reviewed',
  'approved',
  'postponed',
  'reported on',
  'measured',
  'reduced',
  'increased',
  'scheduled',
  'questioned',
  'documented',
  'renegotiated',
  'audited',
  'summarised',
  'extended',
  'cancelled',
  'estimated',
  'compared',
  'published',
  'updated',
  'examined',
];
const adjectives = [
  'quarterly',
  'annual',
  'regional',
  'revised',
  'preliminary',
  'detailed',
  'external',
  'internal',
  'seasonal',
  'average',
  'delayed',
  'disputed',
  'confidential',
  'shared',
  'monthly',
  'overdue',
  'expected',
  'current',
  'proposed',
  'final',
];
/** The topics a document dwells on. */
const nouns = [
  'budget',
  'forecast',
  'contract',
  'shipment',
  'invoice',
  'inventory',
  'schedule',
  'audit',
  'survey',
  'policy',
  'margin',
  'revenue',
  'delivery',
  'warranty',
  'training',
  'maintenance',
  'pricing',
  'insurance',
  'payroll',
  'recruitment',
  'termination clause',
  'safety inspection',
  'energy bill',
  'freight cost',
  'customer complaint',
  'product recall',
  'software licence',
  'office lease',
  'travel expense',
  'tax return',
  'exchange rate',
  'supplier rating',
  'production line',
  'spare part',
  'storage fee',
  'loan agreement',
  'marketing campaign',
  'data backup',
  'network outage',
  'patent filing',
];
const endings = [
  (random: () => number) => `after the meeting in ${pick(random, months)}`,
  (random: () => number) => `by ${1 + Math.floor(random() * 40)} percent`,
  (random: () => number) => `for the ${pick(random, regions)} region`,
  (random: () => number) => `before the end of ${pick(random, months)}`,
  () => 'because of rising costs',
  () => 'at the request of the client',
  (random: () => number) => `in line with clause ${1 + Math.floor(random() * 30)}.${1 + Math.floor(random() * 9)}`,
  (random: () => number) => `at a cost of ${100 + Math.floor(random() * 9_900)} euros`,
  () => 'without further notice',
  (random: () => number) => `for the next ${2 + Math.floor(random() * 22)} months`,
];
const months = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October'];
const regions = ['north', 'south', 'east', 'west', 'central', 'coastal', 'mountain', 'northern', 'southern', 'inland'];

/** A document's topics: three nouns it comes back to. */
export function topicsOf(random: () => number): string[] {
  return [pick(random, nouns), pick(random, nouns), pick(random, nouns)];
}

/** One sentence, its noun one of `topics` two times in three. */
export function sentence(random: () => number, topics: string[]): string {
  const noun = random() < 2 / 3 ? pick(random, topics) : pick(random, nouns);
  return `${pick(random, subjects)} ${pick(random, verbs)} the ${pick(random, adjectives)} ${noun} ${pick(random, endings)(random)}.`;
}

export function paragraph(random: () => number, topics: string[], sentences: number): string {
  return Array.from({ length: sentences }, () => sentence(random, topics)).join(' ');
}

/**
 * Chunk-sized passages (about 700 to 1,100 characters, the chunker's up to 1,200), `count` of them, in documents of
 * `perDocument` sharing topics: the texts the search phases seed the index with.
 */
export function passages(seed: number, count: number, perDocument: number): string[] {
  const random = seededRandom(seed);
  const texts: string[] = [];
  let topics = topicsOf(random);
  for (let index = 0; index < count; index++) {
    if (index % perDocument === 0) topics = topicsOf(random);
    texts.push(paragraph(random, topics, 7 + Math.floor(random() * 4)));
  }
  return texts;
}

/** A question about a passage: a few of its words, as a user would ask about something they read. */
export function questionAbout(random: () => number, passage: string): string {
  const words = passage
    .replace(/[^A-Za-z ]/g, ' ')
    .split(/\s+/)
    .filter((word) => word.length > 4);
  const chosen = Array.from({ length: 5 }, () => pick(random, words).toLowerCase());
  return `What does it say about the ${chosen.join(' ')}?`;
}

/** A PDF of `pages` pages of four or five paragraphs of business prose each (about 2,000 characters a page). */
export function reportPdf(pages: number, seed = 17): Promise<Buffer> {
  const random = seededRandom(seed);
  const texts: string[] = [];
  let topics = topicsOf(random);
  for (let page = 0; page < pages; page++) {
    // A new section (new topics) every ten pages, as a long report has.
    if (page % 10 === 0) topics = topicsOf(random);
    const paragraphs = 4 + Math.floor(random() * 2);
    texts.push(
      Array.from({ length: paragraphs }, () => paragraph(random, topics, 4 + Math.floor(random() * 3))).join('\n\n'),
    );
  }
  return pdfWith(texts);
}

const products = [
  'steel bracket',
  'copper wire',
  'oak shelf',
  'glass panel',
  'rubber seal',
  'brass hinge',
  'paint tin',
];

/**
 * A sales table as CSV at `path`, `rows` data rows under a header, written as a stream (a 100 MB file is never held).
 * `wide` adds the columns of a table an analyst imports (quantity, unit price, paid, a note); the narrow form is
 * what the index reads row by row. Returns the file's size in bytes.
 */
export async function writeSalesCsv(
  path: string,
  rows: number,
  options: { wide: boolean; seed?: number },
): Promise<number> {
  const random = seededRandom(options.seed ?? 29);
  const out = createWriteStream(path);
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, 'drain');
  };
  await write(
    options.wide
      ? 'order_id,order_date,region,product,quantity,unit_price,paid,note\n'
      : 'order_id,date,region,product,amount\n',
  );
  let buffered = '';
  for (let row = 0; row < rows; row++) {
    const date = `2024-${String(1 + Math.floor(random() * 12)).padStart(2, '0')}-${String(1 + Math.floor(random() * 28)).padStart(2, '0')}`;
    const region = pick(random, regions);
    const product = pick(random, products);
    if (options.wide) {
      const quantity = 1 + Math.floor(random() * 500);
      const price = (1 + random() * 250).toFixed(2);
      const note =
        random() < 0.3 ? `"${pick(random, adjectives)} ${pick(random, nouns)}, ${pick(random, months)}"` : '';
      buffered += `${100_000 + row},${date},${region},${product},${quantity},${price},${random() < 0.8},${note}\n`;
    } else {
      buffered += `${100_000 + row},${date},${region},${product},${(random() * 2_000).toFixed(2)}\n`;
    }
    if (buffered.length > 1 << 16) {
      await write(buffered);
      buffered = '';
    }
  }
  await write(buffered);
  out.end();
  await once(out, 'finish');
  return (await stat(path)).size;
}

/** Rows of the wide sales table that make about `bytes` of CSV (measured on a sample of the same rows). */
export async function wideRowsFor(path: string, bytes: number): Promise<number> {
  const sampleRows = 10_000;
  const size = await writeSalesCsv(path, sampleRows, { wide: true });
  return Math.floor((bytes / size) * sampleRows);
}
