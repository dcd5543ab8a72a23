import { rm } from 'node:fs/promises';
import { dropDatabase } from '../../db/databases.ts';
import { testTemplateDatabase } from './databases.ts';

interface Services {
  temporal: { stop(): Promise<void> };
  database: { url: string; stop(): Promise<void> };
}

export default async function globalTeardown(): Promise<void> {
  const bundle = process.env.TESSERA_TEST_OWN_BUNDLE;
  if (bundle) await rm(bundle, { force: true });
  const services = (globalThis as { tesseraTestServices?: Services }).tesseraTestServices;
  if (!services) return;
  await dropDatabase(services.database.url, testTemplateDatabase()).catch(() => undefined);
  await services.temporal.stop();
  await services.database.stop();
}
