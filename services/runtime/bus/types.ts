// The event bus contract shared by the NATS JetStream adapter and the in-process one.

import type { LoggerLike as Logger } from "../logging/logger-like.js";

/** Re-exported so this module's public types stay self-contained. */
export type { Logger };

export interface BusMessage {
  subject: string;
  /** The event id, carried as Nats-Msg-Id. */
  id: string;
  data: Uint8Array;
  /** Application headers (trace context and the like); Nats-Msg-Id is `id`, not repeated here. */
  headers: Record<string, string>;
  /** Stream sequence. */
  seq: number;
  stream: string;
  timestamp: Date;
  redelivered: boolean;
}

export interface StreamDefinition {
  /** A JetStream stream name, e.g. ORDERS. */
  name: string;
  /** Subjects it captures, e.g. ["orders.v1.>"]. */
  subjects: string[];
  maxAgeMs?: number;
  maxMsgs?: number;
  /** How long a publish with an already-seen id is dropped as a duplicate (default 2 minutes). */
  duplicateWindowMs?: number;
}

export interface PublishOptions {
  id: string;
  headers?: Record<string, string>;
}

export interface PublishAck {
  stream: string;
  seq: number;
  duplicate: boolean;
}

export interface RetryPolicy {
  /** Delay before the first redelivery of a failed message (default 500 ms); doubles per attempt. */
  initialDelayMs?: number;
  /** Ceiling of the redelivery delay (default 30 s). */
  maxDelayMs?: number;
}

export interface ConsumeOptions {
  stream: string;
  durable: string;
  filterSubjects?: string[];
  /** Where a new durable starts; an existing one always resumes after its last ack. Default 'all'. */
  deliverFrom?: "all" | "new";
  retry?: RetryPolicy;
  /**
   * A work queue: pull one message at a time and the next only once it is handled, so consumers
   * sharing the durable (replicas of a worker pool) share the messages out one by one rather than
   * each taking a batch. NATS only; the in-process bus ignores it.
   */
  oneAtATime?: boolean;
}

export interface SubscribeOptions {
  stream: string;
  filterSubjects?: string[];
  /** First stream sequence to deliver; without it only messages published from now on arrive. */
  startSeq?: number;
}

/** What a stream holds now. */
export interface StreamInfo {
  /** Oldest sequence still retained; lastSeq + 1 when the stream holds nothing. */
  firstSeq: number;
  /** Sequence of the newest message ever stored; 0 when none was. */
  lastSeq: number;
}

export interface Stoppable {
  stop(): Promise<void>;
}

export interface BusHealth {
  ok: boolean;
  detail?: string;
}

export interface EventBus {
  readonly kind: "nats" | "memory";
  ensureStreams(defs: StreamDefinition[]): Promise<void>;
  publish(subject: string, data: Uint8Array, opts: PublishOptions): Promise<PublishAck>;
  /** Durable consumer: handler resolves → ack; throws → redelivery with backoff. At-least-once. */
  consume(opts: ConsumeOptions, handler: (m: BusMessage) => Promise<void>): Promise<Stoppable>;
  /** Ephemeral ordered subscription from a start sequence (live streams, Last-Event-ID replay). */
  subscribe(opts: SubscribeOptions, handler: (m: BusMessage) => void): Promise<Stoppable>;
  /** Where a stream starts and ends now, e.g. to tell a resume point that is gone from one never reached. */
  streamInfo(stream: string): Promise<StreamInfo>;
  health(): Promise<BusHealth>;
  close(): Promise<void>;
}

export interface OpenBusOptions {
  /** nats://… selects NATS JetStream; without it the bus lives in this process. */
  url?: string;
  logger: Logger;
  /** Connection name shown by the NATS server. */
  name?: string;
  /** In-process bus only: messages each stream keeps for replay (see MemoryBusOptions). JetStream keeps its own. */
  replayWindow?: number;
}
