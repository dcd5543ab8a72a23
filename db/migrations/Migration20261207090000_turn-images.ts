import { Migration } from '@mikro-orm/migrations';

/**
 * The uploaded image a turn's message carried (db/entities/chat-turn.entity.ts, `image_file_id`): a turn standing in for
 * it (`replaces_turn`) attaches it again, and `GET /history` names it. Nullable, no foreign key (a deleted file leaves
 * the id behind); turns so far had none stored.
 */
export class Migration20261207090000_turn_images extends Migration {
  override name = 'Migration20261207090000_turn_images';

  override up(): void | Promise<void> {
    this.addSql(`alter table "chat_turns" add "image_file_id" varchar(255) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "chat_turns" drop column "image_file_id";`);
  }
}
