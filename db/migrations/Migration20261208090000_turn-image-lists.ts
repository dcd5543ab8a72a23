import { Migration } from '@mikro-orm/migrations';

/**
 * A turn's message may carry several uploaded images (`image_file_ids`, db/entities/chat-turn.entity.ts): the turn
 * stores their ids in order, as `chat_turns.image_file_ids`. Each turn's one stored image so far
 * (`image_file_id`, Migration20261207090000_turn_images) becomes its list of one, and that column goes (one place for
 * a turn's images). Down keeps the first image of each list.
 */
export class Migration20261208090000_turn_image_lists extends Migration {
  override name = 'Migration20261208090000_turn_image_lists';

  override up(): void | Promise<void> {
    this.addSql(`alter table "chat_turns" add "image_file_ids" text[] not null default '{}';`);
    this.addSql(
      `update "chat_turns" set "image_file_ids" = array["image_file_id"]::text[] where "image_file_id" is not null;`,
    );
    this.addSql(`alter table "chat_turns" drop column "image_file_id";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "chat_turns" add "image_file_id" varchar(255) null;`);
    this.addSql(`update "chat_turns" set "image_file_id" = "image_file_ids"[1];`);
    this.addSql(`alter table "chat_turns" drop column "image_file_ids";`);
  }
}
