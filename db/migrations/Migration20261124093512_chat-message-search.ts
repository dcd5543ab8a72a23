import { Migration } from '@mikro-orm/migrations';

/**
 * Chat messages name the agent that answered (agent service) and carry a generated full-text vector of their content
 * (`simple` configuration, see db/entities/chat-message.entity.ts), GIN-indexed for GET /search/messages.
 */
export class Migration20261124093512_chat_message_search extends Migration {
  override name = 'Migration20261124093512_chat_message_search';

  override up(): void | Promise<void> {
    this.addSql(`alter table "chat_messages" add column "agent_id" varchar(255) null;`);
    this.addSql(
      `alter table "chat_messages" add column "search_vector" tsvector generated always as (to_tsvector('simple', coalesce(content, ''))) stored null;`,
    );
    this.addSql(`create index "chat_messages_search_vector_index" on "chat_messages" using gin("search_vector");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "chat_messages_search_vector_index";`);
    this.addSql(`alter table "chat_messages" drop column if exists "search_vector";`);
    this.addSql(`alter table "chat_messages" drop column if exists "agent_id";`);
  }
}
