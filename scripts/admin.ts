/**
 * Operator commands. `npm run admin -- create-key --email a@b.c [--plan pro] [--name laptop]` creates the
 * user if needed and prints a new API key (the only time it is shown). Uses DATABASE_URL, else the
 * embedded database under .data/ (the one `npm start` uses).
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { ApiKeyService } from '../api/services/apikeys/service.ts';
import { createKeySchema } from '../api/gateway/routes/apikeys/schema.ts';
import { migrate, openOrm } from '../db/orm.ts';
import { openPool } from '../db/pool.ts';
import { AccountPlans } from '../activities/credits/accounts.ts';
import { CreditLedger } from '../activities/credits/credit-ledger.ts';
import { loadPlans } from '../config/load-plans.ts';
import { ensureDatabase } from './lib/database.ts';

const usage = 'usage: npm run admin -- create-key --email <email> [--plan free|starter|pro|business] [--name <label>]';
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { email: { type: 'string' }, plan: { type: 'string' }, name: { type: 'string' } },
});
if (positionals[0] !== 'create-key') {
  console.error(usage);
  process.exit(2);
}
const parsed = createKeySchema.extend({ email: z.email() }).safeParse(values);
if (!parsed.success) {
  console.error(`${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}\n${usage}`);
  process.exit(2);
}
const database = await ensureDatabase({ dataDir: new URL('../.data', import.meta.url).pathname, log: () => undefined });
const orm = await openOrm(database.url, { poolMax: 1 });
const pool = openPool(database.url, { max: 1 });
try {
  await migrate(orm);
  const ledger = new CreditLedger(orm, pool);
  const accounts = new AccountPlans(orm, ledger, loadPlans());
  const keys = new ApiKeyService({ orm, pool, masterKey: undefined, accounts });
  const user = await keys.ensureUser({ email: parsed.data.email, plan: parsed.data.plan });
  const { key, secret } = await keys.create(user.id, parsed.data.name ?? null);
  console.log(
    JSON.stringify({ user_id: user.id, email: user.email, plan: user.plan, key_id: key.id, key: secret }, null, 2),
  );
} finally {
  await pool.end();
  await orm.close();
  await database.stop();
}
