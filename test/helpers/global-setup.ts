/**
 * Once per `npm test` run: a Temporal dev server (reused when one already answers) and a freshly migrated
 * template database; each test file clones the template into a database of its own.
 */
import { resolve } from 'node:path';
import { migrate, openOrm } from '../../db/orm.ts';
import { ensureDatabase } from '../../scripts/lib/database.ts';
import { createDatabase, dropDatabase } from '../../db/databases.ts';
import { ensureTemporalServer } from '../../scripts/lib/temporal-server.ts';
import { buildWorkflowBundleFile } from '../../worker/create-worker.ts';
import { testTemplateDatabase, withDatabase } from './databases.ts';

export default async function globalSetup(): Promise<void> {
  const log = (line: string) => process.stderr.write(`[test setup] ${line}\n`);
  // Headless: tests need no Web UI, and two runs on other TEMPORAL_ADDRESS ports (DATABASE_URL set to a shared
  // server as well) can then run side by side.
  const temporal = await ensureTemporalServer({
    address: process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    uiPort: 0,
    log,
  });
  const database = await ensureDatabase({ dataDir: '.data', log });
  // The workflow code bundled once for the run: every test file's in-process worker (and the platforms the tests
  // start as processes, which inherit the environment) reads it instead of bundling again.
  // Removed by the global teardown.
  if (!process.env.WORKFLOW_BUNDLE_PATH) {
    const bundlePath = resolve('.data', `test-workflow-bundle-${process.pid}.json`);
    await buildWorkflowBundleFile(bundlePath);
    process.env.WORKFLOW_BUNDLE_PATH = bundlePath;
    process.env.TESSERA_TEST_OWN_BUNDLE = bundlePath;
  }
  process.env.TESSERA_TEST_TEMPLATE = `tessera_test_template_${process.pid}`;
  const template = testTemplateDatabase();
  await dropDatabase(database.url, template);
  await createDatabase(database.url, template);
  const orm = await openOrm(withDatabase(database.url, template), { poolMax: 1 });
  await migrate(orm);
  await orm.close();
  process.env.TEMPORAL_ADDRESS = temporal.address;
  process.env.TESSERA_TEST_DATABASE_URL = database.url;
  (globalThis as { tesseraTestServices?: unknown }).tesseraTestServices = { temporal, database };
}
