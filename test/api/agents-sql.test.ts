/**
 * Read-only SQL and table imports on the agent service (spec 4.9 and 8; docs/files-and-rag.md),
 * through HTTP with files made here, real PostgreSQL and Temporal: CSV types and bad rows, an xlsx, a name taken and
 * replaced, the list of tables; hostile statements refused by the parser with the kind named, and the same statements
 * stopped by the database alone when the parser is skipped; other users' files, imports and tables out of reach on
 * every route; the statement timeout and the row limit; a large CSV answered 202 and loaded with bounded memory; an
 * agent answering "total sales by region" from SQL through /chat/stream.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { UserDataDatabase } from '../../activities/user-data/data-database.ts';
import type { RunningGateway } from '../../api/server.ts';
import { callDirective } from '../helpers/agents.ts';
import { csvOf, xlsxWith } from '../helpers/documents.ts';
import { startReplica, startTestPlatform, type TestPlatform } from '../helpers/platform.ts';
import { waitFor } from '../helpers/wait.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

let platform: TestPlatform;
let owner: { key: string; user_id: string };
let stranger: { key: string; user_id: string };

const maxRows = 50;

beforeAll(async () => {
  platform = await startTestPlatform({
    SQL_MAX_ROWS: String(maxRows),
    SQL_STATEMENT_TIMEOUT: '1s',
    // Imports here finish within the request; the large file's 202 is shown on a replica that never waits.
    SQL_IMPORT_WAIT: '60s',
  });
  owner = await platform.createKey();
  stranger = await platform.createKey();
}, 300_000);

afterAll(async () => {
  await platform?.close();
});

async function call(path: string, init: { key?: string; method?: string; body?: unknown; base?: string } = {}) {
  const response = await platform.agents(path, {
    key: init.key,
    method: init.method ?? 'GET',
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: response.status, body: (await response.json()) as Json, headers: response.headers };
}

async function upload(key: string, fileName: string, bytes: Buffer | string): Promise<string> {
  const saved = await call('/upload', {
    key,
    method: 'POST',
    body: { file_name: fileName, content_base64: Buffer.from(bytes).toString('base64') },
  });
  expect(saved.status).toBe(201);
  return saved.body.id;
}

const query = (key: string, sql: string, extra: Record<string, unknown> = {}) =>
  call('/sql/query', { key, method: 'POST', body: { sql, ...extra } });

const regions = ['north', 'south', 'east', 'west'];

/** A user's schema in the data database (activities/user-data/data-database.ts names it so). */
const schemaOf = (userId: string) => `userdata_${createHash('sha256').update(userId).digest('hex').slice(0, 16)}`;

/**
 * 150 data rows of every type, and two bad rows: line 41 has a field too many, line 61 an amount that is no number
 * (1 of 150 values: within the 1% a column may miss, so the column stays numeric). The first 20 rows are clean, as
 * the upload store wants of a CSV.
 */
function salesCsv(): { csv: string; totals: Map<string, number>; rows: number } {
  const rows: unknown[][] = [
    ['Region', 'Amount', 'Units', 'Active', 'Day', 'Sold at', 'Synced at', 'Note', 'Zip', 'Empty'],
  ];
  const totals = new Map<string, number>();
  for (let index = 1; index <= 150; index++) {
    const region = regions[index % 4]!;
    const amount = Math.round(index * 12.5 * 100) / 100 + 0.25;
    const day = `2024-03-${String((index % 28) + 1).padStart(2, '0')}`;
    const row: unknown[] = [
      region,
      amount,
      index * 3,
      index % 2 === 0 ? 'true' : 'no',
      day,
      `${day} 10:${String(index % 60).padStart(2, '0')}:00`,
      `${day}T08:00:00+02:00`,
      index % 10 === 0 ? `said "hi", then ${index}` : String(index),
      String(index).padStart(5, '0'),
      '',
    ];
    if (index === 40) row.push('surplus');
    if (index === 60) row[1] = 'n/a';
    rows.push(row);
    if (index !== 40 && index !== 60) totals.set(region, (totals.get(region) ?? 0) + amount);
  }
  return { csv: csvOf(rows), totals, rows: 148 };
}

let salesImportId: string;
let salesFileId: string;

describe('CSV into a table', () => {
  it('infers every type, loads the good rows, and counts and reports the bad ones', async () => {
    const { csv, totals, rows } = salesCsv();
    salesFileId = await upload(owner.key, 'Sales Q1 (2024).csv', csv);
    const imported = await call('/sql/csv_to_db', {
      key: owner.key,
      method: 'POST',
      body: { file_id: salesFileId, table: 'sales' },
    });
    expect(imported.status).toBe(201);
    expect(imported.headers.get('location')).toBe(`/sql/imports/${imported.body.id}`);
    salesImportId = imported.body.id;
    expect(imported.body).toMatchObject({
      id: expect.stringMatching(/^imp_/),
      file_id: salesFileId,
      table: 'sales',
      status: 'completed',
      result: {
        table: 'sales',
        rows,
        bad_rows: 2,
        bad_row_samples: [
          { line: 41, reason: 'expected 10 fields, found 11' },
          { line: 61, reason: 'column amount: "n/a" is not numeric' },
        ],
      },
    });
    expect(imported.body.result.columns.map((column: Json) => [column.name, column.type, column.header])).toEqual([
      ['region', 'text', 'Region'],
      ['amount', 'numeric', 'Amount'],
      ['units', 'bigint', 'Units'],
      ['active', 'boolean', 'Active'],
      ['day', 'date', 'Day'],
      ['sold_at', 'timestamp', 'Sold at'],
      ['synced_at', 'timestamptz', 'Synced at'],
      ['note', 'text', 'Note'],
      ['zip', 'text', 'Zip'],
      ['empty', 'text', 'Empty'],
    ]);

    const byRegion = await query(
      owner.key,
      'select region, sum(amount) as total, count(*) as n from sales group by region order by region',
    );
    expect(byRegion.status).toBe(200);
    expect(byRegion.body.columns).toEqual([
      { name: 'region', type: 'text' },
      { name: 'total', type: 'numeric' },
      { name: 'n', type: 'bigint' },
    ]);
    expect(byRegion.body.rows).toEqual(
      [...totals.keys()].sort().map((region) => [region, totals.get(region), expect.any(Number)]),
    );
    const typed = await query(
      owner.key,
      `select active, day, sold_at, synced_at, zip, note, empty from sales where units = $1`,
      { params: [30] },
    );
    expect(typed.body.rows).toEqual([
      [true, '2024-03-11', '2024-03-11 10:10:00', '2024-03-11 06:00:00+00', '00010', 'said "hi", then 10', null],
    ]);

    const followed = await call(`/sql/imports/${salesImportId}`, { key: owner.key });
    expect(followed.status).toBe(200);
    expect(followed.body).toMatchObject({ status: 'completed', rows_read: 150, error: null });
    const tables = await call('/sql/tables', { key: owner.key });
    expect(tables.body.tables).toContainEqual({
      name: 'sales',
      columns: expect.arrayContaining([{ name: 'amount', type: 'numeric' }]),
      row_count: rows,
      import_id: salesImportId,
      file_id: salesFileId,
    });
  });

  it('reads an Excel workbook made here: numbers, dates, booleans and text', async () => {
    const workbook = await xlsxWith([
      ['Product', 'Price', 'Stock', 'Launched', 'Discontinued'],
      ['Lamp', 19.99, 12, new Date(Date.UTC(2023, 0, 15)), false],
      ['Desk', 149.5, 3, new Date(Date.UTC(2022, 5, 1)), true],
      ['Chair', 89, 40, new Date(Date.UTC(2024, 10, 30)), false],
    ]);
    const fileId = await upload(owner.key, 'Products.xlsx', workbook);
    const imported = await call('/sql/csv_to_db', { key: owner.key, method: 'POST', body: { file_id: fileId } });
    expect(imported.status).toBe(201);
    expect(imported.body.result).toMatchObject({ table: 'products', rows: 3, bad_rows: 0 });
    expect(imported.body.result.columns.map((column: Json) => column.type)).toEqual([
      'text',
      'numeric',
      'bigint',
      'date',
      'boolean',
    ]);
    const stock = await query(owner.key, 'select sum(price * stock) as value, min(launched) from products');
    expect(stock.body.rows).toEqual([[19.99 * 12 + 149.5 * 3 + 89 * 40, '2022-06-01']]);
  });

  it('refuses a name that is taken unless the import replaces it', async () => {
    const taken = await call('/sql/csv_to_db', {
      key: owner.key,
      method: 'POST',
      body: { file_id: salesFileId, table: 'products' },
    });
    expect(taken.status).toBe(409);
    expect(taken.body.error.message).toMatch(/products already exists/);
    const replaced = await call('/sql/csv_to_db', {
      key: owner.key,
      method: 'POST',
      body: { file_id: salesFileId, table: 'products', replace: true },
    });
    expect(replaced.status).toBe(201);
    const count = await query(owner.key, 'select count(*) from products');
    expect(count.body.rows).toEqual([[148]]);
    const badName = await call('/sql/csv_to_db', {
      key: owner.key,
      method: 'POST',
      body: { file_id: salesFileId, table: 'pg_sales' },
    });
    expect([badName.status, badName.body.error.param]).toEqual([400, 'table']);
  });

  it('refuses a file that is not a spreadsheet', async () => {
    const png = Buffer.from(
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
      'base64',
    );
    const fileId = await upload(owner.key, 'dot.png', png);
    const refused = await call('/sql/csv_to_db', { key: owner.key, method: 'POST', body: { file_id: fileId } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/is png: only CSV and Excel/);
  });
});

/** Statements that must never run, and the kind each refusal names; `otherSchema` holds another user's tables. */
const hostileStatements = (otherSchema: string): Array<[string, string]> => [
  ['insert into sales (region) values ($$x$$)', 'insert'],
  ["update sales set amount = 0 where region = 'north'", 'update'],
  ['delete from sales', 'delete'],
  ["merge into sales using (select 1) s on false when not matched then insert (region) values ('x')", 'merge'],
  ['create table stolen (a int)', 'create table'],
  ['drop table sales', 'drop table'],
  ['alter table sales add column x int', 'alter table'],
  ['truncate sales', 'truncate'],
  ['grant select on sales to public', 'grant'],
  ["copy sales to '/tmp/tessera-stolen.csv'", 'copy'],
  ['select * into stolen from sales', 'select into'],
  ['select * from sales for update', 'select for update'],
  ['with gone as (delete from sales returning *) select count(*) from gone', 'delete'],
  ['explain analyze delete from sales', 'explain delete'],
  ['select pg_sleep(3)', 'function pg_sleep'],
  ["select pg_read_file('/etc/passwd')", 'function pg_read_file'],
  ["select set_config('statement_timeout', '0', false), pg_sleep(3)", 'function set_config'],
  ["select lo_import('/etc/passwd')", 'function lo_import'],
  ['select lo_create(0)', 'function lo_create'],
  ["select nextval('sales_seq')", 'function nextval'],
  ['select pg_terminate_backend(pid) from pg_stat_activity', 'function pg_terminate_backend'],
  ["select query_to_xml('select * from pg_catalog.pg_authid', true, true, '')", 'function query_to_xml'],
  ['set role postgres', 'set role'],
  ['reset role', 'reset role'],
  ['select 1; drop table sales', 'several statements'],
  ['select 1 /* a comment */ ; -- another\n delete from sales', 'several statements'],
  ['select relname from pg_class', 'system table pg_class'],
  ['select * from pg_catalog.pg_authid', 'schema pg_catalog'],
  ['select table_name from information_schema.tables', 'schema information_schema'],
  [`select '${otherSchema}.sales'::regclass::oid`, 'cast to regclass'],
  [`select * from ${otherSchema}.sales`, `schema ${otherSchema}`],
  ['do $$ begin perform pg_sleep(3); end $$', 'do'],
  ['create extension dblink', 'create extension'],
  ['vacuum sales', 'vacuum'],
  ['begin', 'begin'],
];

describe('read-only SQL', () => {
  it('refuses every hostile statement with a 400 naming its kind, and changes nothing', async () => {
    const hostile = hostileStatements(schemaOf(stranger.user_id));
    expect(hostile.length).toBeGreaterThanOrEqual(20);
    for (const [sql, kind] of hostile) {
      const refused = await query(owner.key, sql);
      expect([sql, refused.status, refused.body.error.type, refused.body.error.param]).toEqual([
        sql,
        400,
        'invalid_request',
        'sql',
      ]);
      expect(refused.body.error.message).toContain(`Refused: ${kind}`);
    }
    const intact = await query(owner.key, 'select count(*), sum(units) from sales');
    expect(intact.body.rows).toEqual([[148, expect.any(Number)]]);
  });

  it('refuses the same statements by the database alone when the parser is skipped', async () => {
    // The runner itself, with the first line off: only the user's role, the read-only transaction that is rolled
    // back, the extended protocol's one statement and the timeout are left.
    const userData = new UserDataDatabase({
      platformUrl: platform.databaseUrl,
      statementTimeoutMs: 1000,
      maxRows: 10,
    });
    try {
      const before = await userData.query(owner.user_id, 'select count(*), sum(amount) from sales');
      const { schema: otherSchema } = userData.identity(stranger.user_id);
      await userData.ensureUser(stranger.user_id);
      const statements = [
        ...hostileStatements(otherSchema).map(([sql]) => sql),
        `select * from ${otherSchema}.anything`,
        'copy sales to stdout',
        "select set_config('role', 'postgres', false)",
      ];
      const outcomes: Array<[string, string]> = [];
      for (const sql of statements) {
        try {
          await userData.query(owner.user_id, sql, [], { parser: false });
          outcomes.push([sql, 'ran']);
        } catch (error) {
          outcomes.push([sql, (error as { kind?: string }).kind ?? String(error)]);
        }
      }
      // Two run, to no effect: `reset role` resets to the role the session logged in as, the user's own, and `begin`
      // inside the transaction is a warning.
      expect(outcomes.filter(([, outcome]) => outcome === 'ran')).toEqual([
        ['reset role', 'ran'],
        ['begin', 'ran'],
      ]);
      expect(
        outcomes.every(([, outcome]) =>
          ['timeout', 'permission denied', 'read-only', 'error', 'copy', 'ran'].includes(outcome),
        ),
      ).toBe(true);
      const who = await userData.query(owner.user_id, 'select current_user, session_user', [], { parser: false });
      expect(who.rows[0]).toEqual([userData.identity(owner.user_id).role, userData.identity(owner.user_id).role]);
      expect(await userData.query(owner.user_id, 'select count(*), sum(amount) from sales')).toMatchObject({
        rows: before.rows,
      });
    } finally {
      await userData.close();
    }
  });

  it('stops a query at the statement timeout', async () => {
    const slow = await query(
      owner.key,
      'select count(*) from generate_series(1, 100000) a, generate_series(1, 100000) b',
    );
    expect(slow.status).toBe(400);
    expect(slow.body.error.message).toMatch(/statement timeout \(SQL_STATEMENT_TIMEOUT, 1000 ms\)/);
  });

  it('answers at most the row limit and says when it cut the answer', async () => {
    const all = await query(owner.key, `select n from generate_series(1, ${maxRows}) n`);
    expect(all.body).toMatchObject({ row_count: maxRows, truncated: false, elapsed_ms: expect.any(Number) });
    const more = await query(owner.key, `select n from generate_series(1, ${maxRows * 10}) n`);
    expect(more.body).toMatchObject({ row_count: maxRows, truncated: true });
    expect(more.body.rows.at(-1)).toEqual([maxRows]);
    const fewer = await query(owner.key, 'select * from sales order by units', { max_rows: 5 });
    expect(fewer.body).toMatchObject({ row_count: 5, truncated: true });
    const explained = await query(owner.key, 'explain select region from sales');
    expect(explained.body.columns).toEqual([{ name: 'QUERY PLAN', type: 'text' }]);
  });
});

describe('owner isolation', () => {
  it('keeps every route to the caller’s own files, imports and tables', async () => {
    // Another user's file and import are not found; their tables are not there, by name or by schema.
    const otherFile = await call('/sql/csv_to_db', {
      key: stranger.key,
      method: 'POST',
      body: { file_id: salesFileId, table: 'mine' },
    });
    expect([otherFile.status, otherFile.body.error.type]).toEqual([404, 'not_found']);
    const otherImport = await call(`/sql/imports/${salesImportId}`, { key: stranger.key });
    expect([otherImport.status, otherImport.body.error.type]).toEqual([404, 'not_found']);
    const byName = await query(stranger.key, 'select * from sales');
    expect(byName.status).toBe(400);
    expect(byName.body.error.message).toMatch(/relation "sales" does not exist/);
    const ownerSchema = schemaOf(owner.user_id);
    const bySchema = await query(stranger.key, `select * from ${ownerSchema}.sales`);
    expect(bySchema.body.error.message).toContain(`Refused: schema ${ownerSchema}`);
    expect((await call('/sql/tables', { key: stranger.key })).body).toEqual({ tables: [] });
    // The stranger's own table of the same name is theirs alone.
    const theirFile = await upload(
      stranger.key,
      'sales.csv',
      csvOf([
        ['region', 'amount'],
        ['mars', 1],
        ['venus', 2],
      ]),
    );
    const theirs = await call('/sql/csv_to_db', { key: stranger.key, method: 'POST', body: { file_id: theirFile } });
    expect([theirs.status, theirs.body.result.table]).toEqual([201, 'sales']);
    expect((await query(stranger.key, 'select sum(amount) from sales')).body.rows).toEqual([[3]]);
    expect((await query(owner.key, 'select count(*) from sales')).body.rows).toEqual([[148]]);
    // Without a login, nothing.
    for (const [method, path, body] of [
      ['POST', '/sql/query', { sql: 'select 1' }],
      ['GET', '/sql/tables', undefined],
      ['POST', '/sql/csv_to_db', { file_id: salesFileId }],
      ['GET', `/sql/imports/${salesImportId}`, undefined],
    ] as const) {
      expect((await call(path, { method, body })).status).toBe(401);
    }
  });
});

describe('a large CSV', () => {
  let replica: RunningGateway;

  beforeAll(async () => {
    // A replica that never waits: every import is answered 202 and followed at GET /sql/imports/{id}.
    replica = await startReplica(platform, { SQL_IMPORT_WAIT: '1ms' });
  }, 120_000);

  afterAll(async () => {
    await replica?.close();
  });

  /** Uploads a CSV of `rows` rows made here; its file id and size (nothing of it is kept in this process). */
  async function uploadLargeCsv(rows: number): Promise<{ fileId: string; bytes: number }> {
    const lines = ['id,region,amount,day'];
    for (let index = 1; index <= rows; index++) {
      const day = `2024-01-${String((index % 28) + 1).padStart(2, '0')}`;
      lines.push(`${index},${regions[index % 4]},${(index % 1000) + 0.5},${day}`);
    }
    const csv = Buffer.from(`${lines.join('\n')}\n`);
    const form = new FormData();
    form.append('file', new Blob([csv], { type: 'text/csv' }), 'big.csv');
    const saved = await fetch(`${replica.agents!.url}/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.key}` },
      body: form,
    });
    expect(saved.status).toBe(201);
    return { fileId: ((await saved.json()) as Json).id, bytes: csv.length };
  }

  it('is answered 202, streams in twice, and loads every row with bounded memory', async () => {
    // Large enough that holding it (or its rows) would show far above the bound; the 100 MB case is bench:rag's.
    const rows = 250_000;
    const { fileId, bytes } = await uploadLargeCsv(rows);
    expect(bytes).toBeGreaterThan(7 * 1000 * 1000);

    // What this process (the API and its worker run in it) holds while the import runs, measured after a full
    // collection every second so that garbage already let go does not count. A reader that kept the file, or its
    // rows, would hold at least the file's size.
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    const held = () => {
      collect();
      const usage = process.memoryUsage();
      return usage.heapUsed + usage.arrayBuffers;
    };
    // What the upload left behind (its request, the file's copies here) goes within a few collections.
    let baseline = held();
    for (let settle = 0; settle < 4; settle++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      baseline = Math.min(baseline, held());
    }
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, held() - baseline)), 1000);
    try {
      const started = await fetch(`${replica.agents!.url}/sql/csv_to_db`, {
        method: 'POST',
        headers: { authorization: `Bearer ${owner.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ file_id: fileId, table: 'big' }),
      });
      expect(started.status).toBe(202);
      const running = (await started.json()) as Json;
      expect(running.status).toMatch(/inferring|loading/);
      const done = await waitFor(
        'the large import',
        async () => {
          const followed = await call(`/sql/imports/${running.id}`, { key: owner.key });
          return followed.body.status === 'completed' || followed.body.status === 'failed' ? followed.body : null;
        },
        // A bound against a hang, not a speed test: a busy two-core machine may take minutes.
        600_000,
      );
      expect(done).toMatchObject({ status: 'completed', rows_read: rows, result: { rows, bad_rows: 0 } });
    } finally {
      clearInterval(sampler);
    }
    expect(peak).toBeLessThan(bytes / 2);
    const totals = await query(owner.key, 'select count(*), max(day) from big');
    expect(totals.body.rows).toEqual([[rows, '2024-01-28']]);
  }, 660_000);
});

describe('an agent answering from SQL', () => {
  it('answers "total sales by region" from the imported table through /chat/stream', async () => {
    const sql = 'select region, sum(amount) as total from sales group by region order by region';
    const message = `What are the total sales by region? ${callDirective('sql_query', {})} ${callDirective('sql_query', { sql })}`;
    const response = await platform.agents(`/chat/stream/web:${randomUUID()}`, {
      method: 'POST',
      key: owner.key,
      body: JSON.stringify({ message, preferred_agents: ['analyst'] }),
    });
    expect(response.status).toBe(200);
    const events: Json[] = [];
    const stream = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream());
    for await (const event of stream) {
      if (event.data === '[DONE]') break;
      events.push(JSON.parse(event.data));
    }
    const results = events.filter((event) => event.type === 'tool' && event.status === 'done');
    expect(results.map((event) => [event.tool, event.ok])).toEqual([
      ['sql_query', true],
      ['sql_query', true],
    ]);
    expect(results[0].result.tables).toContainEqual(
      expect.objectContaining({ table: 'sales', rows: 148, columns: expect.arrayContaining(['amount numeric']) }),
    );
    const { totals } = salesCsv();
    expect(results[1].result.rows).toEqual([...totals.keys()].sort().map((region) => [region, totals.get(region)]));
    const answer = events
      .filter((event) => event.type === 'token')
      .map((event) => event.text)
      .join('');
    expect(answer).toContain(`"north",${totals.get('north')}`);
  });
});
