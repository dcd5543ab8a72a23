/**
 * Operator commands. Uses DATABASE_URL, else the embedded database in the local state's directory (TESSERA_DATA_DIR,
 * else .data/: scripts/lib/data-dir.ts), the one `npm start` uses.
 *
 * - `npm run admin -- create-key --email a@b.c [--plan pro] [--name laptop] [--reason "…"]` creates the user if needed
 *   (on that plan; an account found keeps its own) and prints a new API key (the only time it is shown); written to the
 *   console's audit log as the shell's `key.create`, in the key's own transaction.
 * - `npm run admin -- grant-admin --email a@b.c [--reason "…"]` gives an account the admin role: logged in, that
 *   person's browser opens the operator console (`/admin`, docs/web-app.md, "Operator console"). The account must exist
 *   (the person logs in once first). `revoke-admin --email a@b.c [--reason "…"]` takes the role back; both are written
 *   to the console's audit log as the shell's, with the reason. `list-admins` prints who has it. Addresses in
 *   ADMIN_EMAILS are admins besides these, whatever their role (the setting is the process's, not the database's).
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { ApiKeyService } from '../api/services/apikeys/service.ts';
import { listAdmins, setRole } from '../api/services/admin/operators.ts';
import { auditReasonSchema, shellActor } from '../api/services/admin/audit.ts';
import { createKeySchema } from '../api/gateway/routes/apikeys/schema.ts';
import { migrate, openOrm } from '../db/orm.ts';
import { openPool } from '../db/pool.ts';
import { AccountPlans } from '../activities/credits/accounts.ts';
import { CreditLedger } from '../activities/credits/credit-ledger.ts';
import { loadPlans } from '../config/load-plans.ts';
import { dataDirectory } from './lib/data-dir.ts';
import { ensureDatabase } from './lib/database.ts';

const usage = [
  'usage: npm run admin -- create-key --email <email> [--plan free|starter|pro|business] [--name <label>]',
  '                                     [--reason <why, for the audit log>]',
  '       npm run admin -- grant-admin --email <email> [--reason <why, for the audit log>]',
  '       npm run admin -- revoke-admin --email <email> [--reason <why, for the audit log>]',
  '       npm run admin -- list-admins',
].join('\n');
const commands = ['create-key', 'grant-admin', 'revoke-admin', 'list-admins'] as const;
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    email: { type: 'string' },
    plan: { type: 'string' },
    name: { type: 'string' },
    reason: { type: 'string' },
  },
});
const command = positionals[0] as (typeof commands)[number];
if (!commands.includes(command) || positionals.length > 1) {
  console.error(usage);
  process.exit(2);
}

function refuse(error: z.ZodError): never {
  console.error(`${error.issues[0]?.path.join('.')}: ${error.issues[0]?.message}\n${usage}`);
  process.exit(2);
}

const createKey = createKeySchema.extend({ email: z.email() });
const roleChange = z.strictObject({ email: z.email(), reason: auditReasonSchema.optional() });
const parsedKey = command === 'create-key' ? createKey.safeParse(values) : null;
const parsedRole = command === 'grant-admin' || command === 'revoke-admin' ? roleChange.safeParse(values) : null;
if (parsedKey && !parsedKey.success) refuse(parsedKey.error);
if (parsedRole && !parsedRole.success) refuse(parsedRole.error);
if (command === 'list-admins' && Object.keys(values).length > 0) {
  console.error(`list-admins takes no options\n${usage}`);
  process.exit(2);
}

const database = await ensureDatabase({ dataDir: dataDirectory(), log: () => undefined });
const orm = await openOrm(database.url, { poolMax: 1 });
const pool = openPool(database.url, { max: 1 });
let exitCode = 0;
try {
  await migrate(orm);
  if (parsedKey?.success) {
    const ledger = new CreditLedger(orm, pool);
    const accounts = new AccountPlans(orm, ledger, loadPlans());
    const keys = new ApiKeyService({ orm, pool, masterKey: undefined, accounts });
    const { email, plan, name, reason } = parsedKey.data;
    const { user, key, secret } = await keys.createForOperator(
      { email, plan, name: name ?? null },
      { actor: shellActor, reason: reason ?? null, requestId: null },
    );
    console.log(
      JSON.stringify({ user_id: user.id, email: user.email, plan: user.plan, key_id: key.id, key: secret }, null, 2),
    );
  } else if (parsedRole?.success) {
    const changed = await setRole(
      pool,
      parsedRole.data.email,
      command === 'grant-admin' ? 'admin' : 'user',
      parsedRole.data.reason ?? null,
    );
    if (changed) {
      console.log(JSON.stringify(changed, null, 2));
    } else {
      console.error(`No account has the address ${parsedRole.data.email}: the person logs in once, then try again.`);
      exitCode = 1;
    }
  } else {
    console.log(JSON.stringify({ admins: await listAdmins(pool) }, null, 2));
  }
} finally {
  await pool.end();
  await orm.close();
  await database.stop();
}
process.exitCode = exitCode;
