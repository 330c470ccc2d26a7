// Which agent answers each chat conversation (issue 16): a channel type and the platform's
// conversation id (a Telegram chat, a Signal number or group, a web conversation) name one agent,
// spawned on the conversation's first message. Shared by every instance; the agent's history is
// its session's. The agent id is not a foreign key: an agent row goes when it stops (idle), and the
// router then spawns a new one for the conversation and replaces the mapping.
import { Migration } from "@mikro-orm/migrations";

export const CONVERSATION_TABLE = "agents_channel_conversation";

export class AgentsChannelConversations0009 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "${CONVERSATION_TABLE}" (
      "channel_type" text not null,
      "conversation_id" text not null,
      "agent_id" uuid not null,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null,
      primary key ("channel_type", "conversation_id")
    )`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "${CONVERSATION_TABLE}"`);
  }
}
