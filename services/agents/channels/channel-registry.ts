// The channel registry: the adapters this instance serves, and their shared state. Connecting and
// disconnecting are idempotent: the state changes with a conditional update (two instances racing
// to connect a channel: one changes it, the other finds it done), and only a change records
// ChannelConnected / ChannelDisconnected in the outbox (stream AGENTS), in the same transaction.
// Every request is audited (`channel.connect` / `channel.disconnect`, severity info, detail
// `{ changed, isConnected }`; an adapter that failed to open: severity error). Each instance
// follows those events on the bus to open or close its own adapters (follow()).
//
// One instance runs each platform adapter (channel-lease.ts): every `renewMs` (3 s) each instance
// brings its adapters in line with the shared state and the leases (reconcile): for a connected
// channel it takes or renews the lease and, holding it, opens the adapter (a failed open is retried,
// 3 s doubling to 60 s); not holding it, it keeps the adapter closed here. A disconnected channel is
// closed and its lease given up. A connect request on the holder (or when the lease is free) opens
// the adapter there; on another instance it only checks the credentials (adapter.check) and records
// the state, the holder's adapter being the one that runs. stop() closes this instance's adapters
// and releases its leases, so another instance takes over at its next renewal; an instance that
// died is taken over once its lease has ended (10 s). The web channel (everyInstance) has no lease.
// A holder that cannot reach the database keeps its adapter open only until its lease would have
// ended, since another instance may have taken it by then. An adapter that reported a loss and is
// opened again here by the registry (a fresh loop, which knows nothing of the loss) has the
// recovery recorded for it.
//
// Connect errors: a missing setting is 400 naming it (checked before the adapter is called); a
// ChannelPlatformError (refused or unreachable) is 502 through the generic HttpErrorStatus detail,
// the adapter's own words only in the log; anything else 503. A platform-side loss or recovery
// (reportConnection) publishes the same events and is audited (`channel.lost` / `channel.recovered`)
// but leaves the stored state alone: it is what was asked for, and the adapter keeps reconnecting.
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { ChannelConnectedSchema, ChannelDisconnectedSchema } from "../../../gen/agents/v1/events_pb.js";
import { ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { HttpErrorStatusSchema } from "../../../gen/meshwork/api/v1/options_pb.js";
import type { EventBus, Stoppable } from "../../runtime/bus/index.js";
import type { Database } from "../../runtime/database/index.js";
import { notFound, truncate } from "../../runtime/errors/index.js";
import type { UnitOfWork } from "../../runtime/outbox/index.js";
import { queryOn } from "../../runtime/outbox/sql.js";
import type { AuditLog } from "../audit/types.js";
import { type ChannelAdapter, ChannelPlatformError } from "./channel-adapter.js";
import { CHANNEL_LEASE_TIMINGS, type ChannelLeases, createChannelLeases, type LeaseTimings } from "./channel-lease.js";
import { CHANNEL_TABLE } from "./channel-table.js";

export interface ChannelView {
  channelType: string;
  displayName: string;
  isConnected: boolean;
  /** The settings the channel needs are set. */
  configured: boolean;
}

export interface ChannelState {
  channelType: string;
  isConnected: boolean;
}

export interface SentMessage {
  channelType: string;
  conversationId: string;
  messageId: string;
}

export interface ChannelRegistry {
  /** Adds an adapter; once started, its state row is made (first registration anywhere: connectedAtStart). */
  register(adapter: ChannelAdapter): Promise<void>;
  /** Makes the state rows of the adapters registered so far and reopens those the database says are connected. */
  start(): Promise<void>;
  /** Every registered channel, by type. */
  list(): Promise<ChannelView[]>;
  connect(type: string): Promise<ChannelState>;
  disconnect(type: string): Promise<ChannelState>;
  /** 409 (Aborted) when the channel is disconnected. */
  send(type: string, conversationId: string, content: string): Promise<SentMessage>;
  /**
   * Follows the changes other instances make: on every channel event of `stream`, the adapter of
   * that type on this instance is opened or closed to match the state the database holds now.
   */
  follow(bus: Pick<EventBus, "subscribe">, stream: string): Promise<Stoppable>;
  /**
   * A platform-side loss (false) or recovery (true) of an adapter open on this instance: publishes
   * channel.disconnected / channel.connected and audits it, while the stored state says connected.
   */
  reportConnection(type: string, connected: boolean, reason?: string): Promise<void>;
  /**
   * Brings this instance's adapters in line with the shared state and the leases now (what the
   * registry does every renewMs once started): opens those whose lease it holds or takes, closes the others.
   */
  reconcile(): Promise<void>;
  /** This instance's id in the leases. */
  readonly instanceId: string;
  /**
   * Closes every adapter on this instance and releases its leases; the shared state is left as it
   * is. `keepLeases`: the leases stay until they end, as those of an instance that died (tests).
   */
  stop(options?: { keepLeases?: boolean }): Promise<void>;
}

export interface ChannelRegistryDeps {
  db: Pick<Database, "em">;
  uow: UnitOfWork;
  audit: AuditLog;
  logger: Pick<Logger, "warn">;
  /** The lease timings (tests shorten them); CHANNEL_LEASE_TIMINGS by default. */
  lease?: Partial<LeaseTimings>;
}

/** A leased adapter on this instance. */
interface Local {
  adapter: ChannelAdapter;
  /** Opened here (by this registry). */
  open: boolean;
  /** performance.now() until which this instance surely holds the lease (its last renewal's start + ttl); 0: not held. */
  heldUntil: number;
  /** Failed opens in a row, and when the next may be tried. */
  failures: number;
  retryAt: number;
  /** The adapter's changes, one at a time. */
  lock: Promise<void>;
  /** The last round could not reach the database (logged once until one does). */
  unreachable: boolean;
}

/** The longest wait between two attempts to open an adapter whose lease this instance holds. */
const OPEN_RETRY_MAX_MS = 60_000;

export function createChannelRegistry({ db, uow, audit, logger, lease }: ChannelRegistryDeps): ChannelRegistry {
  const adapters = new Map<string, ChannelAdapter>();
  const locals = new Map<string, Local>();
  const timings: LeaseTimings = { ...CHANNEL_LEASE_TIMINGS, ...lease };
  const leases: ChannelLeases = createChannelLeases(db, randomUUID(), timings.ttlMs);
  let started = false;
  /** Once stopped, nothing opens an adapter here any more. */
  let stopped = false;
  let ticking: { stop: AbortController; done: Promise<void> } | undefined;

  async function ensureRow(adapter: ChannelAdapter): Promise<boolean> {
    // No row for an unconfigured channel: the first start with it configured applies AutoConnect.
    if (adapter.missingSetting() !== undefined) return isConnected(adapter.type);
    await queryOn(db.em())(
      `insert into "${CHANNEL_TABLE}" ("channel_type", "is_connected", "changed_at") values (?, ?, ?) on conflict ("channel_type") do nothing`,
      [adapter.type, adapter.connectedAtStart, new Date()],
    );
    return isConnected(adapter.type);
  }

  async function isConnected(type: string): Promise<boolean> {
    const rows = await queryOn(db.em())<{ is_connected: boolean }>(
      `select "is_connected" from "${CHANNEL_TABLE}" where "channel_type" = ?`,
      [type],
    );
    return truthy(rows[0]?.is_connected);
  }

  async function resume(adapter: ChannelAdapter): Promise<void> {
    const connected = await ensureRow(adapter);
    const local = locals.get(adapter.type);
    if (local) return exclusive(local, () => reconcileOne(local));
    if (!connected) return;
    // The database says connected: open it here too. A failure is logged; the state stays, and a
    // connect request retries it.
    await adapter.connect().catch((error: unknown) => {
      logger.warn({ channelType: adapter.type, err: describe(error) }, "a connected channel could not be opened on this instance");
    });
  }

  /** Platform-side losses reported by this instance's adapters and not yet followed by a recovery. */
  const lost = new Set<string>();

  async function recordConnection(type: string, connected: boolean, reason?: string): Promise<void> {
    const adapter = adapters.get(type);
    if (!adapter) return;
    await uow.run(async (tx) => {
      const rows = await queryOn(tx.em)<{ is_connected: boolean }>(
        `select "is_connected" from "${CHANNEL_TABLE}" where "channel_type" = ?`,
        [type],
      );
      // Disconnected on request meanwhile: the loss is that, nothing to report.
      if (!truthy(rows[0]?.is_connected)) return;
      tx.record(connected ? ChannelConnectedSchema : ChannelDisconnectedSchema, { channelType: type });
      await audit.record(tx.em, {
        action: connected ? "channel.recovered" : "channel.lost",
        severity: connected ? "info" : "warning",
        resource: type,
        detail: { platformSide: true, isConnected: connected, ...(reason ? { reason: truncate(reason, 200) } : {}) },
      });
    });
    if (connected) lost.delete(type);
    else lost.add(type);
  }

  /** The adapter opened here: a loss it reported before it was closed is over. */
  function opened(local: Local): void {
    local.open = true;
    local.failures = 0;
    local.retryAt = 0;
    if (!lost.has(local.adapter.type)) return;
    recordConnection(local.adapter.type, true).catch((error: unknown) => {
      logger.warn({ channelType: local.adapter.type, err: describe(error) }, "a channel's recovery could not be recorded");
    });
  }

  /** Runs `work` after the adapter's earlier changes. */
  function exclusive<T>(local: Local, work: () => Promise<T>): Promise<T> {
    const run = local.lock.then(work);
    local.lock = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  async function close(local: Local): Promise<void> {
    if (!local.open) return;
    local.open = false;
    await local.adapter.disconnect().catch((error: unknown) => {
      logger.warn({ channelType: local.adapter.type, err: describe(error) }, "a channel adapter failed to close");
    });
  }

  async function releaseLease(local: Local): Promise<void> {
    if (local.heldUntil === 0) return;
    local.heldUntil = 0;
    await leases.release(local.adapter.type);
  }

  /** Takes or renews the lease: answers whether this instance holds it now. */
  async function hold(local: Local): Promise<boolean> {
    const asked = performance.now();
    const held = await leases.acquire(local.adapter.type);
    local.heldUntil = held ? asked + timings.ttlMs : 0;
    return held;
  }

  /** One leased adapter in line with the shared state and the lease (under its lock). */
  async function reconcileOne(local: Local): Promise<void> {
    const { adapter } = local;
    if (stopped) return;
    try {
      const wanted = adapter.missingSetting() === undefined && (await isConnected(adapter.type));
      if (!wanted) {
        await close(local);
        await releaseLease(local);
        return;
      }
      const held = await hold(local);
      local.unreachable = false;
      if (!held) {
        if (local.open) {
          logger.warn({ channelType: adapter.type }, "another instance holds the channel's lease: its adapter closes here");
          await close(local);
        }
        return;
      }
      if (local.open || performance.now() < local.retryAt) return;
      try {
        await adapter.connect();
        opened(local);
      } catch (error) {
        local.failures++;
        local.retryAt = performance.now() + Math.min(OPEN_RETRY_MAX_MS, timings.renewMs * 2 ** (local.failures - 1));
        if (local.failures === 1) {
          logger.warn(
            { channelType: adapter.type, err: describe(error) },
            "a connected channel could not be opened on this instance; retrying",
          );
        }
      }
    } catch (error) {
      // The database did not answer: whether the lease is still this instance's is unknown. Once
      // it would have ended, another instance may run the adapter: it closes here.
      if (!local.unreachable) logger.warn({ channelType: adapter.type, err: describe(error) }, "a channel's lease could not be renewed");
      local.unreachable = true;
      if (local.open && performance.now() >= local.heldUntil) {
        logger.warn({ channelType: adapter.type }, "a channel's lease may have ended: its adapter closes here");
        await close(local);
      }
    }
  }

  async function reconcileAll(): Promise<void> {
    await Promise.all([...locals.values()].map((local) => exclusive(local, () => reconcileOne(local))));
  }

  function startTicking(): void {
    if (ticking) return;
    const stop = new AbortController();
    const done = (async () => {
      while (!stop.signal.aborted) {
        await sleep(timings.renewMs, undefined, { signal: stop.signal, ref: false }).catch(() => {});
        if (stop.signal.aborted) return;
        await reconcileAll();
      }
    })();
    ticking = { stop, done };
  }

  function adapterOf(type: string): ChannelAdapter {
    const adapter = adapters.get(type.toLowerCase());
    if (!adapter) throw notFound(`channel '${truncate(type)}' not found`);
    return adapter;
  }

  /** Sets the state; records the event and the audit entry in one transaction. Answers whether it changed. */
  async function setState(adapter: ChannelAdapter, connected: boolean): Promise<ChannelState> {
    const action = connected ? "channel.connect" : "channel.disconnect";
    return uow.run(async (tx) => {
      const changed = await queryOn(tx.em)(
        `update "${CHANNEL_TABLE}" set "is_connected" = ?, "changed_at" = ? where "channel_type" = ? and "is_connected" <> ? returning "channel_type"`,
        [connected, new Date(), adapter.type, connected],
      );
      if (changed.length > 0) {
        tx.record(connected ? ChannelConnectedSchema : ChannelDisconnectedSchema, { channelType: adapter.type });
      }
      await audit.record(tx.em, {
        action,
        severity: "info",
        resource: adapter.type,
        detail: { changed: changed.length > 0, isConnected: connected },
      });
      return { channelType: adapter.type, isConnected: connected };
    });
  }

  return {
    async register(adapter) {
      if (adapter.type !== adapter.type.toLowerCase() || !/^[a-z][a-z0-9_-]{0,63}$/.test(adapter.type)) {
        throw new Error(`channel type "${adapter.type}" must be a lower-case name`);
      }
      if (adapters.has(adapter.type)) throw new Error(`channel "${adapter.type}" is already registered`);
      adapters.set(adapter.type, adapter);
      if (!adapter.everyInstance) {
        locals.set(adapter.type, {
          adapter,
          open: false,
          heldUntil: 0,
          failures: 0,
          retryAt: 0,
          lock: Promise.resolve(),
          unreachable: false,
        });
      }
      if (started) await resume(adapter);
    },

    async start() {
      started = true;
      for (const adapter of adapters.values()) await resume(adapter);
      startTicking();
    },

    instanceId: leases.instanceId,

    reconcile: reconcileAll,

    async list() {
      const rows = await queryOn(db.em())<{ channel_type: string; is_connected: boolean }>(
        `select "channel_type", "is_connected" from "${CHANNEL_TABLE}" where "channel_type" = any(?::text[])`,
        // Types are plain lower-case names (register checks), so the array literal needs no quoting.
        [`{${[...adapters.keys()].join(",")}}`],
      );
      const state = new Map(rows.map((r) => [r.channel_type, truthy(r.is_connected)]));
      return [...adapters.values()]
        .sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0))
        .map((a) => ({
          channelType: a.type,
          displayName: a.displayName,
          isConnected: state.get(a.type) ?? false,
          configured: a.missingSetting() === undefined,
        }));
    },

    async connect(type) {
      const adapter = adapterOf(type);
      const missing = adapter.missingSetting();
      if (missing !== undefined) {
        await audit.record(db.em(), {
          action: "channel.connect",
          severity: "warning",
          resource: adapter.type,
          detail: { changed: false, isConnected: await isConnected(adapter.type), missingSetting: missing },
        });
        throw new ConnectError(`channel '${adapter.type}' is not configured: set ${missing}`, Code.InvalidArgument);
      }
      // A channel configured after the first start has no row yet.
      await ensureRow(adapter);
      const local = locals.get(adapter.type);
      const open = async () => {
        try {
          if (!local) await adapter.connect();
          else if (stopped || !(await hold(local))) {
            // Another instance runs the adapter (or will: this one is stopping): only the credentials are checked here.
            await adapter.check?.();
          } else if (!local.open) {
            await adapter.connect();
            opened(local);
          }
        } catch (error) {
          // The adapter's own words go to the log only: an answer or an audit entry could be read
          // by any User, and an adapter's error might quote more than it should.
          logger.warn({ channelType: adapter.type, err: describe(error) }, "a channel adapter failed to open");
          await audit.record(db.em(), {
            action: "channel.connect",
            severity: "error",
            resource: adapter.type,
            detail: { changed: false, isConnected: await isConnected(adapter.type), failed: true },
          });
          if (error instanceof ChannelPlatformError) throw platformFailure(adapter.type, error, "refused the connection");
          if (error instanceof ConnectError && error.code === Code.Unimplemented) throw error;
          throw new ConnectError(`channel '${adapter.type}' could not connect; see the gateway's log`, Code.Unavailable);
        }
        return setState(adapter, true);
      };
      // Opened and recorded under the adapter's lock: a renewal round in between would read the
      // state not yet connected and close the adapter again.
      return local ? exclusive(local, open) : open();
    },

    async disconnect(type) {
      const adapter = adapterOf(type);
      // The state first: a failing close on this instance must not keep the channel "connected".
      const state = await setState(adapter, false);
      const local = locals.get(adapter.type);
      if (local) {
        // Closed here and the lease given up (on the holder; others follow the event).
        await exclusive(local, () => reconcileOne(local));
        return state;
      }
      await adapter.disconnect().catch((error: unknown) => {
        logger.warn({ channelType: adapter.type, err: describe(error) }, "a channel adapter failed to close");
      });
      return state;
    },

    async send(type, conversationId, content) {
      const adapter = adapterOf(type);
      if (!(await isConnected(adapter.type))) {
        throw new ConnectError(`channel '${adapter.type}' is not connected`, Code.Aborted);
      }
      let messageId: string;
      try {
        messageId = await adapter.send(conversationId, content);
      } catch (error) {
        if (!(error instanceof ChannelPlatformError)) throw error;
        logger.warn({ channelType: adapter.type, err: error.message }, "a channel refused a message");
        throw platformFailure(adapter.type, error, "refused the message");
      }
      return { channelType: adapter.type, conversationId, messageId };
    },

    async follow(bus, stream) {
      // One adapter change at a time, in the order the events come; each reads the state afresh,
      // so a burst of changes ends on the database's last word.
      let chain = Promise.resolve();
      return bus.subscribe({ stream, filterSubjects: ["agents.v1.channel.>"] }, (message) => {
        const schema = message.subject === "agents.v1.channel.connected" ? ChannelConnectedSchema : ChannelDisconnectedSchema;
        let type: string;
        try {
          type = fromBinary(schema, message.data).channelType;
        } catch {
          return;
        }
        const adapter = adapters.get(type);
        if (!adapter) return;
        const local = locals.get(type);
        chain = chain.then(async () => {
          try {
            if (local) await exclusive(local, () => reconcileOne(local));
            else if (await isConnected(type)) await adapter.connect();
            else await adapter.disconnect();
          } catch (error) {
            logger.warn({ channelType: type, err: describe(error) }, "a channel adapter could not follow a change of its state");
          }
        });
      });
    },

    reportConnection: recordConnection,

    async stop(options = {}) {
      stopped = true;
      const current = ticking;
      ticking = undefined;
      current?.stop.abort();
      await current?.done;
      for (const adapter of adapters.values()) {
        const local = locals.get(adapter.type);
        const closing = async () => {
          if (local) local.open = false;
          await adapter.disconnect().catch((error: unknown) => {
            logger.warn({ channelType: adapter.type, err: describe(error) }, "a channel adapter failed to close");
          });
        };
        await (local ? exclusive(local, closing) : closing());
      }
      if (options.keepLeases) return;
      // Closed first, then released: another instance taking over never runs beside this one.
      for (const local of locals.values()) local.heldUntil = 0;
      await leases.releaseAll().catch((error: unknown) => {
        logger.warn({ err: describe(error) }, "the channel leases could not be released; they end by themselves");
      });
    },
  };
}

/** 502 with a reason clients can tell apart; the adapter's words (which might quote too much) stay in the log. */
function platformFailure(type: string, error: ChannelPlatformError, refusal: string): ConnectError {
  const refused = error.kind === "refused";
  return new ConnectError(`channel '${type}': the platform ${refused ? refusal : "could not be reached"}`, Code.Unavailable, undefined, [
    { desc: ErrorInfoSchema, value: { reason: refused ? "CHANNEL_PLATFORM_REFUSED" : "CHANNEL_PLATFORM_UNREACHABLE", domain: "agents" } },
    { desc: HttpErrorStatusSchema, value: { status: 502 } },
  ]);
}

function truthy(value: unknown): boolean {
  return value === true || value === "t" || value === "true";
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
