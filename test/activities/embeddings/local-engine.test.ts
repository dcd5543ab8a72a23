/**
 * The local embedding engine alone (Universal Sentence Encoder Lite in its worker thread): vectors of length 1, the
 * same text giving the same vector, and its quality measured on a small labelled retrieval set whose queries share
 * almost no words with their documents (a bag of words would fail it), with its speed on this machine. The figures
 * are printed for docs/gateway.md ("Embeddings").
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { LocalEmbeddingEngine } from '../../../activities/embeddings/local-engine.ts';

const engine = new LocalEmbeddingEngine();
afterAll(() => engine.close());

const dot = (left: Float32Array, right: Float32Array) =>
  left.reduce((sum, value, index) => sum + value * right[index]!, 0);

/** Each query's relevant document is the one at the same index. */
const documents = [
  'Either party may end this agreement by giving thirty days written notice to the other.',
  'The tenant shall pay rent on the first day of each month into the landlord’s account.',
  'Preheat the oven, knead the dough for ten minutes and let it rise for an hour before baking.',
  'The central bank raised interest rates by half a point to curb inflation.',
  'Our flight was delayed for three hours because of a storm over the airport.',
  'The striker scored twice in the second half and the team won the championship.',
  'Drink plenty of water and rest in bed until the fever goes down.',
  'Restart the router and check that the network cable is plugged in.',
  'The museum displays paintings by Dutch masters of the seventeenth century.',
  'Solar panels on the roof convert sunlight into electricity for the house.',
];
const queries = [
  'How can the contract be terminated?',
  'When is the monthly payment for the apartment due?',
  'recipe for homemade bread',
  'monetary policy and rising prices',
  'plane departure postponed by bad weather',
  'football match result',
  'what to do when you have a cold and a high temperature',
  'my internet connection is not working',
  'old art exhibition',
  'renewable energy at home',
];

describe('the local embedding engine', () => {
  it('returns one vector of length 1 per text, deterministically', async () => {
    const vectors = await engine.embed(['the same text', 'another text', 'the same text']);
    expect(vectors).toHaveLength(3);
    expect(vectors[0]!.length).toBe(512);
    expect(Math.sqrt(dot(vectors[0]!, vectors[0]!))).toBeCloseTo(1, 3);
    expect(dot(vectors[0]!, vectors[2]!)).toBeCloseTo(1, 5);
  });

  it('finds the document a paraphrased query means (labelled set), and reports its speed', async () => {
    const documentVectors = await engine.embed(documents);
    const queryVectors = await engine.embed(queries);
    let top1 = 0;
    let reciprocalRanks = 0;
    for (const [index, query] of queryVectors.entries()) {
      const ranked = documentVectors
        .map((document, position) => ({ position, score: dot(query, document) }))
        .sort((left, right) => right.score - left.score);
      const rank = ranked.findIndex((entry) => entry.position === index) + 1;
      if (rank === 1) top1 += 1;
      reciprocalRanks += 1 / rank;
    }
    const accuracy = top1 / queries.length;
    const meanReciprocalRank = reciprocalRanks / queries.length;

    // Speed: chunk-sized texts (about 60 words, as RAG indexes), in the engine's batches.
    const chunk = documents.join(' ').split(' ').slice(0, 60).join(' ');
    const texts = Array.from({ length: 64 }, (_, index) => `${index}. ${chunk}`);
    const started = performance.now();
    await engine.embed(texts);
    const textsPerSecond = texts.length / ((performance.now() - started) / 1000);
    console.log(
      `local-embedding: top-1 ${top1}/${queries.length}, MRR ${meanReciprocalRank.toFixed(2)}, ` +
        `${textsPerSecond.toFixed(1)} texts/s (60-word chunks, batches of 16)`,
    );
    expect(accuracy).toBeGreaterThanOrEqual(0.8);
    expect(meanReciprocalRank).toBeGreaterThanOrEqual(0.85);
  });
});
