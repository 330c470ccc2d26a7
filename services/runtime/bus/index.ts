// Event bus module: one contract, backed by NATS JetStream or by an in-process implementation.
export { openBus } from "./open-bus.js";
export { createMemoryBus, type MemoryBusOptions } from "./memory-bus.js";
export { connectNatsBus } from "./nats-bus.js";
export { subjectMatches, subjectsOverlap } from "./subject-match.js";
export { eventSubjectPattern, eventSubjectsOf, streamSubjects, subjectOf } from "./event-subject.js";
export type {
  BusHealth,
  BusMessage,
  ConsumeOptions,
  EventBus,
  Logger,
  OpenBusOptions,
  PublishAck,
  PublishOptions,
  RetryPolicy,
  Stoppable,
  StreamDefinition,
  StreamInfo,
  SubscribeOptions,
} from "./types.js";
