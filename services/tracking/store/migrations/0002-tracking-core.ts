// Devices, observations, geofences with their per-device state, breaches, speed alerts and the
// integration feeds devices may point at. Every documented filter has an index; history by
// device and time is served by the unique (device_id, observed_at desc).
import { Migration } from "@mikro-orm/migrations";

export class TrackingCore0002 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "tracking_asset" add column "is_seeded" boolean not null default false`);

    this.addSql(`create table "tracking_integration_feed" (
      "id" uuid primary key,
      "name" text null,
      "provider" text null,
      "is_enabled" boolean not null,
      "auto_create_devices" boolean not null,
      "default_tags" text null,
      "configuration_json" text null,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null
    )`);

    this.addSql(`create table "tracking_device" (
      "id" uuid primary key,
      "identifier" text null,
      "label" text null,
      "protocol" text null,
      "asset_id" uuid null references "tracking_asset" ("id") on delete set null,
      "provider" text null,
      "external_id" text null,
      "tags" text null,
      "integration_feed_id" uuid null references "tracking_integration_feed" ("id") on delete set null,
      "last_seen_at" timestamptz null,
      "is_seeded" boolean not null default false,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null
    )`);
    this.addSql(`create unique index "tracking_device_identifier_uq" on "tracking_device" ("identifier") where "identifier" is not null`);
    this.addSql(`create index "tracking_device_created_idx" on "tracking_device" ("created_at" desc, "id" desc)`);
    this.addSql(`create index "tracking_device_asset_idx" on "tracking_device" ("asset_id")`);
    this.addSql(`create index "tracking_device_feed_idx" on "tracking_device" ("integration_feed_id")`);

    this.addSql(`create table "tracking_observation" (
      "id" uuid primary key,
      "device_id" uuid not null references "tracking_device" ("id") on delete cascade,
      "asset_id" uuid null,
      "observed_at" timestamptz not null,
      "latitude" double precision not null,
      "longitude" double precision not null,
      "altitude" double precision null,
      "accuracy_meters" double precision null,
      "speed_kmh" double precision null,
      "heading_degrees" double precision null,
      "metadata" text null,
      "source" text not null,
      "received_at" timestamptz not null
    )`);
    // The duplicate rule (one observation per device and observedAt) and the history-by-device index in one.
    this.addSql(`create unique index "tracking_observation_device_time_uq" on "tracking_observation" ("device_id", "observed_at" desc)`);
    this.addSql(
      `create index "tracking_observation_asset_time_idx" on "tracking_observation" ("asset_id", "observed_at" desc, "id" desc) where "asset_id" is not null`,
    );
    this.addSql(`create index "tracking_observation_time_idx" on "tracking_observation" ("observed_at" desc, "id" desc)`);

    this.addSql(`create table "tracking_geofence" (
      "id" uuid primary key,
      "name" text null,
      "description" text null,
      "center_latitude" double precision not null,
      "center_longitude" double precision not null,
      "radius_meters" double precision not null,
      "is_active" boolean not null,
      "is_seeded" boolean not null default false,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null
    )`);
    this.addSql(`create index "tracking_geofence_created_idx" on "tracking_geofence" ("created_at" desc, "id" desc)`);

    this.addSql(`create table "tracking_geofence_state" (
      "device_id" uuid not null references "tracking_device" ("id") on delete cascade,
      "geofence_id" uuid not null references "tracking_geofence" ("id") on delete cascade,
      "inside" boolean not null,
      "observed_at" timestamptz not null,
      primary key ("device_id", "geofence_id")
    )`);

    for (const table of ["tracking_geofence_breach", "tracking_speed_alert"]) {
      const extra =
        table === "tracking_geofence_breach"
          ? `"geofence_id" uuid not null, "breach_event_type" text not null,`
          : `"speed_kmh" double precision not null, "threshold_kmh" double precision not null,`;
      // geofence_id has no foreign key: a breach outlives the fence it crossed.
      this.addSql(`create table "${table}" (
        "id" uuid primary key,
        "device_id" uuid not null references "tracking_device" ("id") on delete cascade,
        "asset_id" uuid null,
        "observation_id" uuid not null,
        ${extra}
        "latitude" double precision not null,
        "longitude" double precision not null,
        "occurred_at" timestamptz not null,
        "acknowledged" boolean not null default false,
        "acknowledged_by" text null,
        "acknowledged_at" timestamptz null,
        "created_at" timestamptz not null
      )`);
      this.addSql(`create index "${table}_time_idx" on "${table}" ("occurred_at" desc, "id" desc)`);
      this.addSql(`create index "${table}_open_idx" on "${table}" ("occurred_at" desc, "id" desc) where not "acknowledged"`);
      this.addSql(`create index "${table}_device_idx" on "${table}" ("device_id", "occurred_at" desc)`);
      this.addSql(`create index "${table}_asset_idx" on "${table}" ("asset_id", "occurred_at" desc) where "asset_id" is not null`);
    }
  }

  override async down(): Promise<void> {
    for (const table of [
      "tracking_speed_alert",
      "tracking_geofence_breach",
      "tracking_geofence_state",
      "tracking_geofence",
      "tracking_observation",
      "tracking_device",
      "tracking_integration_feed",
    ]) {
      this.addSql(`drop table if exists "${table}"`);
    }
    this.addSql(`alter table "tracking_asset" drop column "is_seeded"`);
  }
}
