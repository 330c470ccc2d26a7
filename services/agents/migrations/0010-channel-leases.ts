// Which instance runs each platform chat adapter (issue 16): one row per channel type with the
// holding instance's id and when its lease ends (database time). The holder renews it; another
// instance takes it once it has ended, or at once when the holder released it (a clean stop).
import { Migration } from "@mikro-orm/migrations";

export const LEASE_TABLE = "agents_channel_lease";

export class AgentsChannelLeases0010 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "${LEASE_TABLE}" (
      "channel_type" text primary key,
      "holder" text not null,
      "expires_at" timestamptz not null
    )`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "${LEASE_TABLE}"`);
  }
}
