// Agents, their sessions, turns and tool calls, shared by every instance of the agent gateway.
// An agent row exists while the agent runs (its turn marker says a turn is under way, on whatever
// instance); the session, its turns and tool calls stay after it stops (closed_at set).
import { Migration } from "@mikro-orm/migrations";

export class AgentsCore0001 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "agents_session" (
      "id" uuid primary key,
      "agent_id" uuid not null,
      "provider" text not null,
      "model" text not null,
      "system_prompt" text null,
      "created_at" timestamptz not null,
      "closed_at" timestamptz null,
      "turn_count" integer not null default 0
    )`);
    this.addSql(`create index "agents_session_created_idx" on "agents_session" ("created_at" desc, "id")`);
    this.addSql(`create table "agents_agent" (
      "id" uuid primary key,
      "session_id" uuid not null references "agents_session" ("id"),
      "provider" text not null,
      "model" text not null,
      "system_prompt" text null,
      "state" text not null,
      "turn_count" integer not null default 0,
      "created_at" timestamptz not null,
      "last_activity_at" timestamptz not null,
      "running_turn" uuid null,
      "running_since" timestamptz null
    )`);
    this.addSql(`create index "agents_agent_activity_idx" on "agents_agent" ("last_activity_at")`);
    this.addSql(`create table "agents_turn" (
      "id" uuid primary key,
      "session_id" uuid not null references "agents_session" ("id") on delete cascade,
      "index" integer not null,
      "message" text not null,
      "response" text not null,
      "provider" text not null,
      "model" text not null,
      "started_at" timestamptz not null,
      "duration_ms" integer not null,
      "prompt_tokens" integer not null,
      "completion_tokens" integer not null,
      unique ("session_id", "index")
    )`);
    this.addSql(`create table "agents_tool_call" (
      "id" uuid primary key,
      "turn_id" uuid not null references "agents_turn" ("id") on delete cascade,
      "position" integer not null,
      "call_id" text not null,
      "name" text not null,
      "arguments" text not null,
      "result" text not null,
      "outcome" text not null,
      unique ("turn_id", "position")
    )`);
  }

  override async down(): Promise<void> {
    for (const table of ["agents_tool_call", "agents_turn", "agents_agent", "agents_session"]) {
      this.addSql(`drop table if exists "${table}"`);
    }
  }
}
