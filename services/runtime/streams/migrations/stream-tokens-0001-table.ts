// Event stream tokens (POST /api/events/token): a hash and an expiry per token. Expired rows are
// pruned by expiry, hence its index.
import { Migration } from "@mikro-orm/migrations";

export class TrackingStreamTokens0006 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "tracking_stream_token" (
      "token_hash" text primary key,
      "expires_at" timestamptz not null,
      "created_at" timestamptz not null
    )`);
    this.addSql(`create index "tracking_stream_token_expires_idx" on "tracking_stream_token" ("expires_at")`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "tracking_stream_token"`);
  }
}
