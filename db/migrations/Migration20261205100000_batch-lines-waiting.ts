import { Migration } from '@mikro-orm/migrations';

/**
 * A batch's lines that wait for capacity (db/entities/batch.entity.ts): each line's mark, and its batch's count, since
 * when and the model, which the capacity queue's gauges and the batch object show.
 */
export class Migration20261205100000_batch_lines_waiting extends Migration {
  override name = 'Migration20261205100000_batch_lines_waiting';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "batches" add "lines_waiting" int not null default 0, add "waiting_since" timestamptz null, add "waiting_model" varchar(255) null;`,
    );

    this.addSql(`alter table "batch_lines" add "waiting_since" timestamptz null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "batch_lines" drop column "waiting_since";`);

    this.addSql(
      `alter table "batches" drop column "lines_waiting", drop column "waiting_since", drop column "waiting_model";`,
    );
  }
}
