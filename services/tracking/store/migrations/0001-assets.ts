// Assets table; the index serves the list order (newest first, id as tie-break).
import { Migration } from "@mikro-orm/migrations";

export class TrackingAssets0001 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "tracking_asset" (
      "id" uuid primary key,
      "name" text null,
      "description" text null,
      "category" text null,
      "speed_threshold_kmh" double precision null,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null
    )`);
    this.addSql(`create index "tracking_asset_created_idx" on "tracking_asset" ("created_at" desc, "id" desc)`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "tracking_asset"`);
  }
}
