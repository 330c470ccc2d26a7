// NATS JetStream adapter: streams created or updated at start, durable pull consumers with explicit acks,
// Nats-Msg-Id as the event id for server-side dedupe, and ordered consumers for live subscriptions.
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  connect,
  headers as natsHeaders,
  nanos,
  type ConsumerConfig,
  type ConsumerMessages,
  type JsMsg,
  type NatsConnection,
  type NatsError,
} from "nats";
import { DEFAULT_RETRY, retryDelay } from "./retry-delay.js";
import { assertValidSubject, matchesAny } from "./subject-match.js";
import type {
  BusHealth,
  BusMessage,
  ConsumeOptions,
  EventBus,
  Logger,
  PublishAck,
  PublishOptions,
  Stoppable,
  StreamDefinition,
  StreamInfo,
  SubscribeOptions,
} from "./types.js";

const MSG_ID = "Nats-Msg-Id";
const DEFAULT_DUPLICATE_WINDOW_MS = 120_000;
const ACK_WAIT_MS = 30_000;
// Pulled but unprocessed messages age towards ack_wait too; a small batch keeps slow handlers from
// having their queued messages redelivered behind their back.
const PULL_BATCH = 16;
// How long a one-at-a-time pull waits for a message before asking again (and a stop waits at most).
const NEXT_EXPIRES_MS = 2_000;
const HEALTH_TIMEOUT_MS = 2_000;
const STREAM_NOT_FOUND = 10059;
const CONSUMER_NOT_FOUND = 10014;

export async function connectNatsBus(opts: { url: string; logger: Logger; name?: string }): Promise<EventBus> {
  const logger = opts.logger.child({ component: "bus", bus: "nats" });
  const nc = await connect({
    servers: opts.url.split(",").map((s) => s.trim()),
    name: opts.name ?? "meshwork",
    // A service outlives NATS restarts: keep reconnecting, JetStream keeps the state.
    maxReconnectAttempts: -1,
  });
  logger.info({ servers: redactServers(opts.url), server: nc.info?.version }, "connected to NATS");
  void watchStatus(nc, logger);

  const jsm = await nc.jetstreamManager();
  const js = nc.jetstream();
  const running = new Set<Stoppable>();
  // Several filter subjects on one consumer need server 2.10; older servers get one wide consumer filtered here.
  const multiFilter = versionAtLeast(nc.info?.version, [2, 10, 0]);
  let closing: Promise<void> | undefined;

  const filterConfig = (filters: string[] | undefined): { server: Partial<ConsumerConfig>; client?: string[] } => {
    if (!filters || filters.length === 0) return { server: {} };
    if (filters.length === 1) return { server: { filter_subject: filters[0] } };
    if (multiFilter) return { server: { filter_subjects: filters } };
    return { server: {}, client: filters };
  };

  const toBusMessage = (m: JsMsg): BusMessage => {
    const headers: Record<string, string> = {};
    let id: string | undefined;
    if (m.headers) {
      for (const key of m.headers.keys()) {
        const value = m.headers.get(key);
        if (key.toLowerCase() === MSG_ID.toLowerCase()) id = value;
        // Other Nats-* headers steer the server (expected sequence, rollups); they are not event metadata.
        else if (!key.toLowerCase().startsWith("nats-")) headers[key] = value;
      }
    }
    return {
      subject: m.subject,
      // A message published without an id (by a foreign publisher) still gets a stable one.
      id: id || `${m.info.stream}-${m.seq}`,
      data: m.data,
      headers,
      seq: m.seq,
      stream: m.info.stream,
      timestamp: new Date(Math.floor(m.info.timestampNanos / 1e6)),
      redelivered: m.redelivered,
    };
  };

  async function ensureStreams(defs: StreamDefinition[]): Promise<void> {
    for (const def of defs) {
      const maxAgeMs = def.maxAgeMs ?? 0;
      let windowMs = def.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS;
      // The server rejects a dedupe window longer than the retention it guards.
      if (maxAgeMs > 0) windowMs = Math.min(windowMs, maxAgeMs);
      const limits = {
        subjects: def.subjects,
        max_age: nanos(maxAgeMs),
        max_msgs: def.maxMsgs ?? -1,
        duplicate_window: nanos(windowMs),
      };
      try {
        const info = await jsm.streams.info(def.name);
        await jsm.streams.update(def.name, { ...info.config, ...limits });
        logger.debug({ stream: def.name, subjects: def.subjects }, "stream updated");
      } catch (err) {
        if (apiErrorCode(err) !== STREAM_NOT_FOUND) throw err;
        await jsm.streams.add({
          name: def.name,
          ...limits,
          storage: StorageType.File,
          retention: RetentionPolicy.Limits,
          discard: DiscardPolicy.Old,
        });
        logger.info({ stream: def.name, subjects: def.subjects }, "stream created");
      }
    }
  }

  async function publish(subject: string, data: Uint8Array, options: PublishOptions): Promise<PublishAck> {
    assertValidSubject(subject);
    const h = natsHeaders();
    for (const [key, value] of Object.entries(options.headers ?? {})) h.set(key, value);
    const ack = await js.publish(subject, data, { msgID: options.id, headers: h });
    return { stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate };
  }

  async function ensureDurable(options: ConsumeOptions, server: Partial<ConsumerConfig>): Promise<void> {
    const wanted = { filter_subject: server.filter_subject, filter_subjects: server.filter_subjects };
    try {
      const info = await jsm.consumers.info(options.stream, options.durable);
      const current = { filter_subject: info.config.filter_subject, filter_subjects: info.config.filter_subjects };
      if (!sameFilters(current, wanted)) {
        // Filters may change between releases; the durable keeps its position, deliver policy is fixed at creation.
        await jsm.consumers.update(options.stream, options.durable, {
          filter_subject: wanted.filter_subject ?? "",
          ...(multiFilter ? { filter_subjects: wanted.filter_subjects ?? [] } : {}),
        });
        logger.info({ stream: options.stream, durable: options.durable, filters: options.filterSubjects }, "consumer filters updated");
      }
    } catch (err) {
      if (apiErrorCode(err) !== CONSUMER_NOT_FOUND) throw err;
      await jsm.consumers.add(options.stream, {
        durable_name: options.durable,
        ack_policy: AckPolicy.Explicit,
        ack_wait: nanos(ACK_WAIT_MS),
        deliver_policy: options.deliverFrom === "new" ? DeliverPolicy.New : DeliverPolicy.All,
        // At-least-once means never giving up; the handler's backoff keeps a poison message cheap.
        max_deliver: -1,
        ...server,
      });
      logger.info({ stream: options.stream, durable: options.durable }, "consumer created");
    }
  }

  async function consume(options: ConsumeOptions, handler: (m: BusMessage) => Promise<void>): Promise<Stoppable> {
    const log = logger.child({ stream: options.stream, durable: options.durable });
    const filters = filterConfig(options.filterSubjects);
    await ensureDurable(options, filters.server);
    const consumer = await js.consumers.get(options.stream, options.durable);
    const retry = { ...DEFAULT_RETRY, ...options.retry };
    let stopping = false;

    const handle = async (m: JsMsg): Promise<void> => {
      if (filters.client && !matchesAny(filters.client, m.subject)) {
        m.ack();
        return;
      }
      const heartbeat = setInterval(() => m.working(), ACK_WAIT_MS / 3);
      try {
        await handler(toBusMessage(m));
        m.ack();
      } catch (err) {
        const delayMs = retryDelay(m.info.deliveryCount, retry);
        log.warn({ err, subject: m.subject, seq: m.seq, deliveries: m.info.deliveryCount, delayMs }, "handler failed; will redeliver");
        m.nak(delayMs);
      } finally {
        clearInterval(heartbeat);
      }
    };

    let messages: ConsumerMessages | undefined;
    let loop: Promise<void>;
    if (options.oneAtATime) {
      // One pull at a time: the next message is asked for once this one is handled.
      loop = (async () => {
        while (!stopping) {
          let m: JsMsg | null;
          try {
            m = await consumer.next({ expires: NEXT_EXPIRES_MS });
          } catch (err) {
            if (stopping || nc.isClosed()) break;
            log.warn({ err }, "pull failed; pulling again");
            await new Promise((resolve) => setTimeout(resolve, NEXT_EXPIRES_MS));
            continue;
          }
          if (!m) continue;
          if (stopping) {
            m.nak();
            break;
          }
          await handle(m);
        }
      })();
    } else {
      const batch = await consumer.consume({ max_messages: PULL_BATCH });
      messages = batch;
      loop = (async () => {
        try {
          for await (const m of batch) {
            if (stopping) {
              // Already pulled but not started: hand it straight back instead of letting ack_wait run out.
              m.nak();
              continue;
            }
            await handle(m);
          }
        } catch (err) {
          if (!stopping) log.error({ err }, "consumer stopped unexpectedly");
        }
      })();
    }

    const stoppable: Stoppable = {
      async stop() {
        if (stopping) return loop;
        stopping = true;
        messages?.stop();
        await loop;
        // Acks are fire-and-forget publishes; flush so a restart right after sees them applied.
        if (!nc.isClosed()) await nc.flush().catch(() => undefined);
        running.delete(stoppable);
      },
    };
    running.add(stoppable);
    return stoppable;
  }

  async function subscribe(options: SubscribeOptions, handler: (m: BusMessage) => void): Promise<Stoppable> {
    const log = logger.child({ stream: options.stream, subscription: true });
    // "From now" is pinned to a sequence here: a consumer created lazily with DeliverPolicy.New could
    // miss messages published between this call returning and the server creating it.
    const startSeq = options.startSeq ?? (await jsm.streams.info(options.stream)).state.last_seq + 1;
    const filters = filterConfig(options.filterSubjects);
    const consumer = await js.consumers.get(options.stream, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: Math.max(startSeq, 1),
      ...(filters.server.filter_subject ? { filterSubjects: filters.server.filter_subject } : {}),
      ...(filters.server.filter_subjects ? { filterSubjects: filters.server.filter_subjects } : {}),
    });
    const messages = await consumer.consume();
    let stopped = false;
    const loop = (async () => {
      try {
        for await (const m of messages) {
          if (stopped) break;
          if (filters.client && !matchesAny(filters.client, m.subject)) continue;
          try {
            handler(toBusMessage(m));
          } catch (err) {
            log.warn({ err, subject: m.subject, seq: m.seq }, "subscriber threw; continuing with the next message");
          }
        }
      } catch (err) {
        if (!stopped) log.error({ err }, "subscription stopped unexpectedly");
      }
    })();
    const stoppable: Stoppable = {
      async stop() {
        stopped = true;
        messages.stop();
        await loop;
        running.delete(stoppable);
      },
    };
    running.add(stoppable);
    return stoppable;
  }

  async function streamInfo(name: string): Promise<StreamInfo> {
    const { state } = await jsm.streams.info(name);
    // An empty stream reports first_seq 0 (never written) or last_seq + 1 (purged or aged out).
    return { firstSeq: state.messages > 0 ? state.first_seq : state.last_seq + 1, lastSeq: state.last_seq };
  }

  async function health(): Promise<BusHealth> {
    if (closing || nc.isClosed()) return { ok: false, detail: "connection closed" };
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        jsm.getAccountInfo(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no JetStream answer within ${HEALTH_TIMEOUT_MS} ms`)), HEALTH_TIMEOUT_MS);
        }),
      ]);
      return { ok: true };
    } catch (err) {
      return { ok: false, detail: err instanceof Error ? err.message : String(err) };
    } finally {
      clearTimeout(timer);
    }
  }

  function close(): Promise<void> {
    closing ??= (async () => {
      await Promise.all([...running].map((r) => r.stop()));
      if (!nc.isClosed()) await nc.drain();
      logger.info("NATS connection closed");
    })();
    return closing;
  }

  return { kind: "nats", ensureStreams, publish, consume, subscribe, streamInfo, health, close };
}

async function watchStatus(nc: NatsConnection, logger: Logger): Promise<void> {
  for await (const s of nc.status()) {
    if (s.type === "disconnect" || s.type === "error") logger.warn({ status: s.type, data: String(s.data) }, "NATS connection trouble");
    else if (s.type === "reconnect") logger.info({ server: String(s.data) }, "NATS reconnected");
  }
}

function apiErrorCode(err: unknown): number | undefined {
  return (err as NatsError | undefined)?.api_error?.err_code;
}

function sameFilters(
  a: { filter_subject?: string; filter_subjects?: string[] },
  b: { filter_subject?: string; filter_subjects?: string[] },
): boolean {
  const norm = (x: { filter_subject?: string; filter_subjects?: string[] }) =>
    [...(x.filter_subjects ?? []), ...(x.filter_subject ? [x.filter_subject] : [])].sort().join("\n");
  return norm(a) === norm(b);
}

function versionAtLeast(version: string | undefined, min: [number, number, number]): boolean {
  const parts = (version ?? "0.0.0").split(/[.-]/).map((p) => Number.parseInt(p, 10) || 0);
  for (let i = 0; i < 3; i++) {
    if ((parts[i] ?? 0) !== min[i]) return (parts[i] ?? 0) > min[i];
  }
  return true;
}

function redactServers(url: string): string {
  return url
    .split(",")
    .map((server) => {
      try {
        const parsed = new URL(server.trim());
        if (parsed.password) parsed.password = "***";
        return parsed.toString();
      } catch {
        return "<unparsable url>";
      }
    })
    .join(",");
}
