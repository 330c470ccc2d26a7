// The channel registry: the adapters this instance serves, and their shared state. Connecting and
// disconnecting are idempotent: the state changes with a conditional update (two instances racing
// to connect a channel: one changes it, the other finds it done), and only a change records
// ChannelConnected / ChannelDisconnected in the outbox (stream AGENTS), in the same transaction.
// Every request is audited (`channel.connect` / `channel.disconnect`, severity info, detail
// `{ changed, isConnected }`; an adapter that failed to open: severity error). Each instance
// follows those events on the bus to open or close its own adapters (follow()).
//
// Connect errors: a missing setting is 400 naming it (checked before the adapter is called); a
// ChannelPlatformError (refused or unreachable) is 502 through the generic HttpErrorStatus detail,
// the adapter's own words only in the log; anything else 503. A platform-side loss or recovery
// (reportConnection) publishes the same events and is audited (`channel.lost` / `channel.recovered`)
// but leaves the stored state alone: it is what was asked for, and the adapter keeps reconnecting.
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
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
  /** Closes every adapter on this instance; the shared state is left as it is. */
  stop(): Promise<void>;
}

export interface ChannelRegistryDeps {
  db: Pick<Database, "em">;
  uow: UnitOfWork;
  audit: AuditLog;
  logger: Pick<Logger, "warn">;
}

export function createChannelRegistry({ db, uow, audit, logger }: ChannelRegistryDeps): ChannelRegistry {
  const adapters = new Map<string, ChannelAdapter>();
  let started = false;

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
    if (!(await ensureRow(adapter))) return;
    // The database says connected: open it here too. A failure is logged; the state stays (another
    // instance may hold it open), and a connect request retries it.
    await adapter.connect().catch((error: unknown) => {
      logger.warn({ channelType: adapter.type, err: describe(error) }, "a connected channel could not be opened on this instance");
    });
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
      if (started) await resume(adapter);
    },

    async start() {
      started = true;
      for (const adapter of adapters.values()) await resume(adapter);
    },

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
      try {
        await adapter.connect();
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
    },

    async disconnect(type) {
      const adapter = adapterOf(type);
      // The state first: a failing close on this instance must not keep the channel "connected".
      const state = await setState(adapter, false);
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
        chain = chain.then(async () => {
          try {
            if (await isConnected(type)) await adapter.connect();
            else await adapter.disconnect();
          } catch (error) {
            logger.warn({ channelType: type, err: describe(error) }, "a channel adapter could not follow a change of its state");
          }
        });
      });
    },

    async reportConnection(type, connected, reason) {
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
    },

    async stop() {
      for (const adapter of adapters.values()) {
        await adapter.disconnect().catch((error: unknown) => {
          logger.warn({ channelType: adapter.type, err: describe(error) }, "a channel adapter failed to close");
        });
      }
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
