import { Migration } from '@mikro-orm/migrations';

/**
 * Regenerate, edit and branches (db/entities/chat-turn.entity.ts): a turn's parent and its branch's turns (`path`), the
 * branch a conversation is on (`head_path`), the branch a share link shows. Every conversation so far is one line:
 * turn n follows n - 1 and its branch is every turn up to n.
 */
export class Migration20261206100000_chat_branches extends Migration {
  override name = 'Migration20261206100000_chat_branches';

  override up(): void | Promise<void> {
    this.addSql(`alter table "chat_conversations" add "head_path" int4multirange not null default '{}';`);
    this.addSql(
      `update "chat_conversations" set "head_path" = int4multirange(int4range(1, "turns" + 1)) where "turns" > 0;`,
    );

    this.addSql(`alter table "chat_turns" add "parent" int null, add "path" int4multirange null;`);
    this.addSql(
      `update "chat_turns" set "parent" = nullif("number" - 1, 0), "path" = int4multirange(int4range(1, "number" + 1));`,
    );
    this.addSql(`alter table "chat_turns" alter column "path" set not null;`);

    this.addSql(`alter table "conversation_shares" add "turns" int4multirange null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "chat_conversations" drop column "head_path";`);
    this.addSql(`alter table "chat_turns" drop column "parent", drop column "path";`);
    this.addSql(`alter table "conversation_shares" drop column "turns";`);
  }
}
