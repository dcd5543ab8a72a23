import { Migration } from '@mikro-orm/migrations';

/**
 * The Responses door's responses (db/entities/model-response.entity.ts): a row per stored Response, written by the API
 * when it is created and by its workflow as it runs (activities/responses/response-store.ts).
 */
export class Migration20261203090000_model_responses extends Migration {
  override name = 'Migration20261203090000_model_responses';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "model_responses" ("id" varchar(255) not null, "user_id" varchar(255) not null, "status" varchar(255) not null, "background" boolean not null, "stream" boolean not null, "model" varchar(255) not null, "served_model" varchar(255) null, "previous_response_id" varchar(255) null, "instructions" text null, "request" jsonb not null, "input_items" jsonb not null, "output" jsonb null, "usage" jsonb null, "error" jsonb null, "incomplete_details" jsonb null, "created_at" timestamptz not null, "completed_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `create index "model_responses_user_id_created_at_index" on "model_responses" ("user_id", "created_at");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "model_responses" cascade;`);
  }
}
