// The channels' tables: the state of each channel type (shared by every instance, kept across
// restarts) and the messages sent through the built-in web channel.
import { EntitySchema } from "@mikro-orm/core";
import { Migration } from "@mikro-orm/migrations";

export const CHANNEL_TABLE = "agents_channel";
export const WEB_MESSAGE_TABLE = "agents_channel_message";

export interface ChannelRow {
  channelType: string;
  isConnected: boolean;
  /** When is_connected last changed (or the row was made). */
  changedAt: Date;
}

export const ChannelEntity = new EntitySchema<ChannelRow>({
  name: "AgentsChannel",
  tableName: CHANNEL_TABLE,
  properties: {
    channelType: { type: "text", primary: true },
    isConnected: { type: "boolean" },
    changedAt: { type: "datetime", columnType: "timestamptz" },
  },
});

export interface ChannelMessageRow {
  id: string;
  channelType: string;
  conversationId: string;
  content: string;
  createdAt: Date;
}

export const ChannelMessageEntity = new EntitySchema<ChannelMessageRow>({
  name: "AgentsChannelMessage",
  tableName: WEB_MESSAGE_TABLE,
  properties: {
    id: { type: "uuid", primary: true },
    channelType: { type: "text" },
    conversationId: { type: "text" },
    content: { type: "text" },
    createdAt: { type: "datetime", columnType: "timestamptz" },
  },
});

export class AgentsChannels0003 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "${CHANNEL_TABLE}" (
      "channel_type" text primary key,
      "is_connected" boolean not null,
      "changed_at" timestamptz not null
    )`);
    this.addSql(`create table "${WEB_MESSAGE_TABLE}" (
      "id" uuid primary key,
      "channel_type" text not null,
      "conversation_id" text not null,
      "content" text not null,
      "created_at" timestamptz not null
    )`);
    this.addSql(
      `create index "${WEB_MESSAGE_TABLE}_conversation_idx" on "${WEB_MESSAGE_TABLE}" ("channel_type", "conversation_id", "created_at")`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "${WEB_MESSAGE_TABLE}"`);
    this.addSql(`drop table if exists "${CHANNEL_TABLE}"`);
  }
}
