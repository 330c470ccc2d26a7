// Lets one outbox row carry a run of events: the multi-row inserts of the fast path write the
// consecutive events that share a subject and headers as one row (a bundle), so a batch of a
// thousand costs one row, one index entry and one update to mark instead of a thousand of each.
import { Migration } from "@mikro-orm/migrations";

export class OutboxEventBundlesMigration extends Migration {
  override up(): void {
    this.addSql(`alter table "outbox_event" add column "event_ids" uuid[] null;`);
  }

  override down(): void {
    this.addSql(`alter table "outbox_event" drop column "event_ids";`);
  }
}
