// Transactional outbox: events are rows committed with the change, then relayed to the event bus.
export { outboxModule } from "./outbox-module.js";
export { OutboxEvent, type OutboxEventRow } from "./outbox-event.js";
export { recordEvent, type RecordEventInput } from "./record-event.js";
export { outboxInserts, recordEvents, type BatchEventInput, type OutboxInsert } from "./record-events.js";
export { startOutboxRelay, type OutboxRelay, type OutboxRelayOptions } from "./outbox-relay.js";
