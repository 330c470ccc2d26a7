// Device events sent by agents next to those the service records: each row stamped at ingest with
// the device's owner and enrollment, the agent's id (once per device), domain, layer and the time
// it was received, with an index per filter of GET /v1/events; the hourly rollup the analytics
// read (device, hour, enrollment, type → count and the latest time), kept in the ingest transaction; and each side's
// grant of detailed access on a partner link.
import { Migration } from "@mikro-orm/migrations";

export class ProtectionDeviceEvents0008 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "protection_device_event"
      add column "account_id" uuid null,
      add column "enrollment_id" uuid null,
      add column "client_id" uuid null,
      add column "domain" text null,
      add column "layer" text null check ("layer" in ('dns', 'application', 'browser')),
      add column "received_at" timestamptz null`);
    // The heartbeat_missed rows written before: their owner and enrollment are in the detail.
    this.addSql(`update "protection_device_event" e
        set "account_id" = coalesce(nullif(e."detail"->>'account_id', '')::uuid,
                                    (select d."account_id" from "protection_device" d where d."id" = e."device_id")),
            "enrollment_id" = coalesce(nullif(e."detail"->>'enrollment_id', '')::uuid,
                                       (select d."enrollment_id" from "protection_device" d where d."id" = e."device_id")),
            "received_at" = e."timestamp"`);
    this.addSql(`delete from "protection_device_event" where "account_id" is null`);
    this.addSql(`alter table "protection_device_event"
      alter column "account_id" set not null,
      alter column "received_at" set not null,
      add constraint "protection_device_event_type_check"
        check ("event_type" in ('block', 'bypass_attempt', 'tamper_attempt', 'enrollment_change', 'heartbeat_missed'))`);
    this.addSql(`drop index if exists "protection_device_event_device_idx"`);
    this.addSql(`create unique index "protection_device_event_client_idx" on "protection_device_event" ("device_id", "client_id")`);
    // GET /v1/events: newest first within one device, one enrollment or one owner, by type or not.
    this.addSql(
      `create index "protection_device_event_device_idx" on "protection_device_event" ("device_id", "timestamp" desc, "id" desc)`,
    );
    this.addSql(
      `create index "protection_device_event_enrollment_idx" on "protection_device_event" ("enrollment_id", "timestamp" desc, "id" desc)`,
    );
    this.addSql(
      `create index "protection_device_event_account_idx" on "protection_device_event" ("account_id", "timestamp" desc, "id" desc)`,
    );
    this.addSql(
      `create index "protection_device_event_account_type_idx" on "protection_device_event" ("account_id", "event_type", "timestamp" desc, "id" desc)`,
    );
    this.addSql(`create table "protection_event_rollup" (
      "device_id" uuid not null,
      "hour" timestamptz not null,
      "enrollment_id" uuid not null,
      "event_type" text not null,
      "count" integer not null,
      -- The latest event of the hour: last_block_at without reading the events.
      "last_at" timestamptz not null,
      primary key ("device_id", "hour", "enrollment_id", "event_type")
    )`);
    this.addSql(`create index "protection_event_rollup_enrollment_idx" on "protection_event_rollup" ("enrollment_id", "hour")`);
    this.addSql(`insert into "protection_event_rollup" ("device_id", "hour", "enrollment_id", "event_type", "count", "last_at")
      select "device_id", date_trunc('hour', "timestamp", 'UTC'), "enrollment_id", "event_type", count(*)::int, max("timestamp")
        from "protection_device_event" where "enrollment_id" is not null
       group by 1, 2, 3, 4`);
    this.addSql(`alter table "protection_partner"
      add column "inviter_detailed_access" boolean not null default false,
      add column "invitee_detailed_access" boolean not null default false`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "protection_partner" drop column "inviter_detailed_access", drop column "invitee_detailed_access"`);
    this.addSql(`drop table if exists "protection_event_rollup"`);
  }
}
