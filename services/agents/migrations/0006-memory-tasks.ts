// The agents' memory (searched with PostgreSQL full text, English configuration) and their tasks,
// shared by every agent and every instance of the gateway (tool catalogue, issue 15).
import { Migration } from "@mikro-orm/migrations";

export class AgentsMemoryTasks0006 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "agents_memory" (
      "id" uuid primary key,
      "text" text not null,
      "category" text null,
      "agent_id" text null,
      "created_at" timestamptz not null,
      "search" tsvector generated always as (
        setweight(to_tsvector('english', coalesce("category", '')), 'B') || setweight(to_tsvector('english', "text"), 'A')
      ) stored
    )`);
    this.addSql(`create index "agents_memory_search_idx" on "agents_memory" using gin ("search")`);
    this.addSql(`create table "agents_task" (
      "id" uuid primary key,
      "title" text not null,
      "description" text null,
      "status" text not null check ("status" in ('pending', 'in_progress', 'done', 'blocked')),
      "priority" text not null check ("priority" in ('low', 'medium', 'high')),
      "owner" text null,
      "due_date" date null,
      "created_by" text null,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null
    )`);
    this.addSql(`create index "agents_task_status_idx" on "agents_task" ("status", "created_at")`);
    this.addSql(`create index "agents_task_owner_idx" on "agents_task" ("owner", "created_at")`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "agents_task"`);
    this.addSql(`drop table if exists "agents_memory"`);
  }
}
