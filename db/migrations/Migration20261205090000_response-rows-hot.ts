import { Migration } from '@mikro-orm/migrations';

/**
 * A stored Response's row is written twice: inserted at admission, then its end (status, output, usage) updated by its
 * model call. None of the updated columns is indexed, so with room on the row's page PostgreSQL updates it in place
 * (a heap-only tuple) instead of writing a new version into both indexes: a fill factor of 70 leaves that room. Pages
 * of rows already written are left as they are.
 */
export class Migration20261205090000_response_rows_hot extends Migration {
  override name = 'Migration20261205090000_response_rows_hot';

  override up(): void | Promise<void> {
    this.addSql(`alter table "model_responses" set (fillfactor = 70);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "model_responses" reset (fillfactor);`);
  }
}
