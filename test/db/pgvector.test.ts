/**
 * pgvector on the test database: the migrated template carries the `vector` extension (migration `pgvector`, on a
 * server the bootstrap made ready: scripts/lib/pgvector.ts), a vector column with an HNSW index answers a
 * nearest-neighbour query in cosine-distance order through that index, and the bootstrap's ensurePgvector, run again
 * on a server that has the extension, neither builds nor copies anything.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import { ensurePgvector } from '../../scripts/lib/pgvector.ts';
import { cloneTestDatabase } from '../helpers/databases.ts';

let database: Awaited<ReturnType<typeof cloneTestDatabase>>;
let client: pg.Client;

beforeAll(async () => {
  database = await cloneTestDatabase();
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
});

afterAll(async () => {
  await client?.end();
  await database?.drop();
});

function cosineDistance(left: number[], right: number[]): number {
  let dot = 0;
  let leftNorm = 0;
  let rightNorm = 0;
  left.forEach((value, index) => {
    dot += value * right[index]!;
    leftNorm += value * value;
    rightNorm += right[index]! * right[index]!;
  });
  return 1 - dot / Math.sqrt(leftNorm * rightNorm);
}

const literal = (vector: number[]) => `[${vector.join(',')}]`;

it('has the vector extension in every migrated database', async () => {
  const { rows } = await client.query<{ extversion: string }>(
    "select extversion from pg_extension where extname = 'vector'",
  );
  expect(rows).toHaveLength(1);
  expect(rows[0]!.extversion).toMatch(/^0\.[5-9]\.|^[1-9]\d*\./); // HNSW came with 0.5.0
});

it('orders by cosine distance through an HNSW index', async () => {
  const query = [0.3, -0.5, 0.8];
  // 300 spread-out vectors, plus one pointing exactly along the query at twice its length: first by cosine distance
  // (0), though not the nearest by Euclidean distance.
  const documents = new Map<number, number[]>();
  for (let id = 1; id <= 300; id++) documents.set(id, [Math.cos(id), Math.sin(id * 0.7), ((id % 13) - 6) / 6 + 0.01]);
  documents.set(
    1000,
    query.map((value) => value * 2),
  );

  await client.query('create table documents (id int primary key, embedding vector(3) not null)');
  await client.query('insert into documents select * from unnest($1::int[], $2::vector[])', [
    [...documents.keys()],
    [...documents.values()].map(literal),
  ]);
  await client.query('create index documents_embedding_hnsw on documents using hnsw (embedding vector_cosine_ops)');

  const nearest = 'select id, embedding <=> $1 as distance from documents order by embedding <=> $1 limit 5';
  await client.query('begin');
  try {
    // The planner must take the index (a sequential scan and sort would order correctly too, and prove nothing);
    // an ef_search above the row count makes the approximate search exhaustive, so the order is exact.
    await client.query('set local enable_seqscan = off');
    await client.query('set local hnsw.ef_search = 400');
    const plan = await client.query<{ 'QUERY PLAN': unknown }>(`explain (format json) ${nearest}`, [literal(query)]);
    const planText = JSON.stringify(plan.rows[0]!['QUERY PLAN']);
    expect(planText).toContain('"Node Type":"Index Scan"');
    expect(planText).toContain('"Index Name":"documents_embedding_hnsw"');

    const { rows } = await client.query<{ id: number; distance: number }>(nearest, [literal(query)]);
    const expected = [...documents.entries()]
      .map(([id, vector]) => ({ id, distance: cosineDistance(vector, query) }))
      .sort((left, right) => left.distance - right.distance)
      .slice(0, 5);
    expect(rows.map((row) => row.id)).toEqual(expected.map((row) => row.id));
    expect(rows[0]!.id).toBe(1000);
    rows.forEach((row, index) => expect(row.distance).toBeCloseTo(expected[index]!.distance, 5));
  } finally {
    await client.query('rollback');
  }
});

it('ensurePgvector, run again and again on a server that has pgvector, changes nothing', async () => {
  const lines: string[] = [];
  const embedded = !process.env.DATABASE_URL?.trim();
  for (let run = 0; run < 3; run++) {
    await ensurePgvector({ url: database.url, embedded }, (line) => lines.push(line));
  }
  // Every install step logs (building, fetching the source, copying files): silence means nothing was done.
  expect(lines).toEqual([]);
  const { rows } = await client.query("select 1 from pg_available_extensions where name = 'vector'");
  expect(rows).toHaveLength(1);
});
