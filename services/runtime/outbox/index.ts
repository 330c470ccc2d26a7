// Transactional outbox: events are rows committed with the change, then relayed to the event bus.
export { outboxModule } from "./outbox-module.js";
export { OutboxEvent, type OutboxEventRow } from "./outbox-event.js";
export { outboxInserts, outboxRows, type OutboxEventInput, type OutboxInsert, type OutboxRow } from "./outbox-rows.js";
export {
  createUnitOfWork,
  transactionOn,
  type RecordOptions,
  type Transaction,
  type UnitOfWork,
  type UnitOfWorkDeps,
} from "./unit-of-work.js";
export { OUTBOX_ROW_HEADER, startOutboxRelay, type OutboxRelay, type OutboxRelayOptions } from "./outbox-relay.js";
