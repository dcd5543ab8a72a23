import { Migration } from '@mikro-orm/migrations';

/** A session's own title, set by its owner (`PATCH /sessions/{id}`); null: the conversation's first message. */
export class Migration20261130090000_session_titles extends Migration {
  override name = 'Migration20261130090000_session_titles';

  override up(): void | Promise<void> {
    this.addSql(`alter table "chat_sessions" add "title" varchar(255) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "chat_sessions" drop column "title";`);
  }
}
