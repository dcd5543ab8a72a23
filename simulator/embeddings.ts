/**
 * Simulated embeddings, the same in every protocol: a hashed bag of words. A text's words are its runs of letters
 * and digits, lower-cased, without common English function words ("the", "with", "how", …), each cut to its first six
 * characters (a crude stem: "terminate", "terminated" and "termination" are one word). Each word adds ±1 at one
 * position in each band of positions ([0,64), [64,256), [256,1024), [1024,…)), chosen and signed by hashing the
 * word; the sum is normalised to length 1. Texts that share words therefore point the same way (their cosine grows
 * with the words they share) and texts that share none are nearly orthogonal, so tests can assert a ranking. Every word has a position in the first 64, so a vector cut to fewer dimensions (OpenAI's
 * `dimensions`, Gemini's `outputDimensionality`) still carries every word, as Matryoshka-trained models do.
 *
 * Deterministic: the same text, model and length always give the same vector, on any machine.
 */

/** Where each band of positions ends; the last band runs to the model's full length. */
const bandEnds = [64, 256, 1024];

/** The full length of a simulated model's vectors: that of the real model of the name, else 1536. */
export function simulatedDimensions(model: string): number {
  if (model.includes('3-large') || model.includes('gemini-embedding')) return 3072;
  if (model.includes('text-embedding-004') || model.includes('embedding-001')) return 768;
  return 1536;
}

/** Words too common to tell texts apart; without them a question and its answer share what matters. */
const functionWords = new Set(
  (
    'a an the and or but if then so of to in on at by for with from into about as than is are was were be been ' +
    'being am do does did has have had can could may might must shall should will would it its this that these ' +
    'those there here i you he she we they me him her us them my your his our their what which who whom whose ' +
    'when where why how not no nor all any each some such very just also only own same too'
  ).split(' '),
);

/** The words of a text as the simulator counts them (see the file comment). */
export function words(text: string): string[] {
  const runs = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return runs.filter((word) => !functionWords.has(word)).map((word) => [...word].slice(0, 6).join(''));
}

/** Simulated token count of an input: about four characters a token, at least one. */
export function simulatedTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/**
 * The vector of `text` at `length` components: the full vector cut to its first `length` components, then
 * renormalised when `renormalise` (OpenAI does; Gemini leaves a shortened vector as it is).
 */
export function simulatedEmbedding(
  text: string,
  fullDimensions: number,
  length = fullDimensions,
  renormalise = true,
): number[] {
  const vector = new Float64Array(fullDimensions);
  for (const word of words(text)) {
    let start = 0;
    for (const [band, end] of [...bandEnds.filter((value) => value < fullDimensions), fullDimensions].entries()) {
      const hash = fnv1a(`${band}:${word}`);
      vector[start + (hash % (end - start))]! += hash & 0x80000000 ? -1 : 1;
      start = end;
    }
  }
  const norm = Math.hypot(...vector);
  const full = norm === 0 ? Array.from(vector) : Array.from(vector, (value) => value / norm);
  const cut = full.slice(0, length);
  if (!renormalise) return cut;
  const cutNorm = Math.hypot(...cut);
  return cutNorm === 0 ? cut : cut.map((value) => value / cutNorm);
}

/** FNV-1a, 32 bits: a fixed, well-spread hash, so vectors never change between runs or machines. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** Little-endian float32 bytes in base64: OpenAI's `encoding_format: "base64"`. */
export function base64Floats(values: number[]): string {
  return Buffer.from(new Float32Array(values).buffer).toString('base64');
}
