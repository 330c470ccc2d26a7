// The outbox as a database module: every service process includes it next to its own modules.
import type { DatabaseModule } from "../database/index.js";
import { OutboxEventMigration } from "./migrations/outbox-0001-outbox-event.js";
import { OutboxEventBundlesMigration } from "./migrations/outbox-0002-event-bundles.js";
import { OutboxEvent } from "./outbox-event.js";

export const outboxModule: DatabaseModule = {
  name: "outbox",
  entities: [OutboxEvent],
  migrations: [
    { name: "outbox-0001-outbox-event", class: OutboxEventMigration },
    { name: "outbox-0002-event-bundles", class: OutboxEventBundlesMigration },
  ],
};
