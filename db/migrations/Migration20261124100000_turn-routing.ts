import { Migration } from '@mikro-orm/migrations';

/** The routing call of an agent turn, so a session's usage includes what routing its messages cost. */
export class Migration20261124100000_turn_routing extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "chat_turns" add column "routing_workflow_id" varchar(255) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "chat_turns" drop column "routing_workflow_id";`);
  }
}
