// Finds a fence's states without scanning the table: deleting a fence cascades to them, and
// deactivating one clears them.
import { Migration } from "@mikro-orm/migrations";

export class TrackingGeofenceStateByFence0003 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index "tracking_geofence_state_fence_idx" on "tracking_geofence_state" ("geofence_id")`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "tracking_geofence_state_fence_idx"`);
  }
}
