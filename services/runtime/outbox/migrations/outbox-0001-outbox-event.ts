// Creates the outbox table and the partial index the relay scans for unpublished events.
import { Migration } from "@mikro-orm/migrations";

export class OutboxEventMigration extends Migration {
  override up(): void {
    this.addSql(`create table "outbox_event" (
      "id" uuid not null,
      "seq" bigint generated always as identity,
      "subject" text not null,
      "payload" bytea not null,
      "headers" jsonb not null default '{}',
      "created_at" timestamptz not null default now(),
      "published_at" timestamptz null,
      "attempts" int not null default 0,
      "last_error" text null,
      constraint "outbox_event_pkey" primary key ("id")
    );`);
    // Published rows pile up; the relay only ever reads the unpublished tail, in commit-ish order.
    this.addSql(`create index "outbox_event_unpublished_idx" on "outbox_event" ("seq") where "published_at" is null;`);
  }

  override down(): void {
    this.addSql(`drop table if exists "outbox_event";`);
  }
}
