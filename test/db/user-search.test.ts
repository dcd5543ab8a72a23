/**
 * The operator console's user search (api/services/admin/service.ts, `users`) on 50,000 accounts: PostgreSQL answers
 * each of its statements from an index, not a scan of the table, with the plan a prepared statement ends up with
 * (generic: its parameters unknown when planned) as well as the one for its values; a search's first page holds the
 * user whose id was searched and the addresses that start with the search (not those that merely contain it) in byte
 * order, whatever the database's collation; the prefix's range is right for any character. docs/web-app.md,
 * "Operator console", shows these plans.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { newestUsersStatement, prefixRange, searchUsersStatement } from '../../api/services/admin/service.ts';
import { cloneTestDatabase } from '../helpers/databases.ts';

let database: { url: string; drop(): Promise<void> };
let client: pg.Client;
const users = 50_000;
const names = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi'];

beforeAll(async () => {
  database = await cloneTestDatabase();
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
  // alice.1@example.com, bob.2@mail.test, …: every address's first letters shared by thousands of others.
  await client.query(
    `insert into users (id, email, plan, created_at)
     select 'user_' || md5(i::text), ($1::text[])[1 + i % 8] || '.' || i || '@' || (array['example.com', 'mail.test'])[1 + i % 2],
            'free', now() - i * interval '1 second'
     from generate_series(1, $2::int) i`,
    [names, users],
  );
  await client.query(`insert into users (id, email, created_at) values
    ('user_umlaut', 'zoë@example.com', now()), ('user_sharp', 'straße@example.com', now()),
    ('user_inner', 'x-alice.1@example.com', now())`);
  await client.query('analyze users');
}, 120_000);

afterAll(async () => {
  await client?.end();
  await database?.drop();
});

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** The plan of a statement as prepared with `types`, executed with `values`; generic or for those values. */
async function planOf(
  statement: { text: string },
  types: string,
  values: unknown[],
  generic: boolean,
): Promise<PlanNode[]> {
  await client.query(`set plan_cache_mode = ${generic ? 'force_generic_plan' : 'force_custom_plan'}`);
  await client.query(`prepare searched(${types}) as ${statement.text}`);
  try {
    // (EXPLAIN EXECUTE takes no bind parameters: the values as literals.)
    const literals = values.map((value) => (typeof value === 'string' ? client.escapeLiteral(value) : String(value)));
    const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
      `explain (format json) execute searched(${literals.join(', ')})`,
    );
    return nodes(rows[0]!['QUERY PLAN'][0]!.Plan);
  } finally {
    await client.query('deallocate searched');
    await client.query('reset plan_cache_mode');
  }
}

const searchTypes = 'text, text, text, text, boolean, int';
const searchValues = (q: string, after: string | null, limit = 26) => [
  q,
  ...prefixRange(q),
  after ?? '',
  after === null,
  limit,
];

describe('the user search on 50,000 accounts', () => {
  it('reads its indexes, never the whole table, whether planned for its values or generically', async () => {
    const cases = [
      { statement: searchUsersStatement, types: searchTypes, values: searchValues('alice.12', null) },
      { statement: searchUsersStatement, types: searchTypes, values: searchValues('a', 'alice.30000@mail.test') },
      { statement: searchUsersStatement, types: searchTypes, values: searchValues('user_umlaut', null) },
      { statement: newestUsersStatement, types: 'timestamptz, text, int', values: ['infinity', '', 26] },
    ];
    for (const { statement, types, values } of cases) {
      for (const generic of [true, false]) {
        const plan = await planOf(statement, types, values, generic);
        const scans = plan.filter((node) => node['Relation Name'] === 'users');
        const index = statement === newestUsersStatement ? 'users_created_at_id_index' : 'users_email_prefix_index';
        // Every read of the table an index scan (the id's, by the primary key, unless planned away), its index among them.
        expect({ values, generic, scans: scans.map((node) => node['Node Type']) }).toEqual({
          values,
          generic,
          scans: expect.arrayContaining(['Index Scan']),
        });
        expect(scans.every((node) => node['Node Type'].startsWith('Index'))).toBe(true);
        expect(scans.map((node) => node['Index Name'])).toContain(index);
      }
    }
  });

  it('finds the addresses that start with the search, in byte order, after the user whose id it is', async () => {
    const { rows } = await client.query<{ id: string; email: string }>(searchUsersStatement.text, [
      ...searchValues('alice.1', null, 500),
    ]);
    const { rows: all } = await client.query<{ email: string }>('select email from users where email is not null');
    const expected = all
      .map((row) => row.email)
      .filter((email) => email.startsWith('alice.1'))
      .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
      .slice(0, 500);
    expect(rows.map((row) => row.email)).toEqual(expected);
    expect(rows.map((row) => row.email)).not.toContain('x-alice.1@example.com');

    const byId = await client.query<{ id: string }>(searchUsersStatement.text, searchValues('user_sharp', null));
    expect(byId.rows.map((row) => row.id)).toEqual(['user_sharp']);
    for (const [q, id] of [
      ['zo', 'user_umlaut'],
      ['zoë', 'user_umlaut'],
      ['straß', 'user_sharp'],
    ] as const) {
      const found = await client.query<{ id: string }>(searchUsersStatement.text, searchValues(q, null));
      expect({ q, ids: found.rows.map((row) => row.id) }).toEqual({ q, ids: [id] });
    }
  });

  it('makes the prefix’s range for any character', () => {
    expect(prefixRange('alice')).toEqual(['alice', 'alicf']);
    expect(prefixRange('zo\u00eb')).toEqual(['zo\u00eb', 'zo\u00ec']);
    expect(prefixRange('a\ud7ff')).toEqual(['a\ud7ff', 'a\ue000']);
    expect(prefixRange('a\u{10ffff}')).toEqual(['a\u{10ffff}', 'b']);
    expect(prefixRange('\u{1f600}')).toEqual(['\u{1f600}', '\u{1f601}']);
  });
});
