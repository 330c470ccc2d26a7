// Test harness for the gateway's live hubs: the test-only ChatHubService (test/proto hubs.proto)
// behind the real auth interceptor and API keys, served by a front; the service records what it
// saw (calls, their headers, aborts) and lets tests publish to push and event streams.
import { randomBytes } from "node:crypto";
import WebSocket from "ws";
import { create, type Message } from "@bufbuild/protobuf";
import { anyPack, BoolValueSchema, StringValueSchema, timestampNow } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createRouterTransport, type HandlerContext, type ServiceImpl, type Transport } from "@connectrpc/connect";
import { createFront, type Front, type FrontOptions } from "../../gateway/index.js";
import { HubClientCallSchema, type HubConnectRequest } from "../../gen/meshwork/api/v1/hubs_pb.js";
import { authInterceptor, createApiKeyStore } from "../../services/runtime/auth/index.js";
import {
  buildRoutes,
  createDirectTransport,
  createGrpcClientTransport,
  type ServiceHost,
  startServiceHost,
} from "../../services/runtime/host/index.js";
import { createHubConnectionTokens } from "../../services/runtime/hubs/index.js";
import { testLogger } from "./test-logger.js";
import {
  ChatHubService,
  type ChatChunk,
  ChatChunkSchema,
  type HubEvent,
  type HubEventRun,
  HubEventSchema,
  RoomSchema,
  type StreamChatRequest,
  type StreamEventsRequest,
} from "../gen/meshwork/testing/v1/hubs_pb.js";
import { captureLogger, type LogEntry } from "./gateway-harness.js";

export const KEYS = {
  user: "user-key-0123456789abcdef",
  operator: "operator-key-0123456789abcdef",
} as const;

export interface SeenCall {
  readonly rpc: string;
  readonly input: Message;
  readonly headers: Headers;
  readonly signal: AbortSignal;
}

/** A stream the test feeds: what is pushed goes to every open subscriber. */
class Feed<T> {
  private readonly subscribers = new Set<(item: T) => void>();
  get size() {
    return this.subscribers.size;
  }
  /** One frozen instance for every subscriber, as the mesh's stream hubs hand out events. */
  publish(item: T) {
    Object.freeze(item);
    for (const s of this.subscribers) s(item);
  }
  async *subscribe(signal: AbortSignal): AsyncGenerator<T> {
    const queue: T[] = [];
    let wake: (() => void) | undefined;
    const push = (item: T) => {
      queue.push(item);
      wake?.();
    };
    this.subscribers.add(push);
    const aborted = new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
    try {
      while (!signal.aborted) {
        if (queue.length === 0) await Promise.race([new Promise<void>((resolve) => (wake = resolve)), aborted]);
        wake = undefined;
        while (queue.length > 0) yield queue.shift()!;
      }
    } finally {
      this.subscribers.delete(push);
    }
  }
}

export interface HubHarness {
  readonly front: Front;
  readonly port: number;
  readonly url: string;
  readonly logs: LogEntry[];
  readonly calls: SeenCall[];
  /** Client calls for every /hubs/chat connection's push stream. */
  readonly activity: Feed<Message>;
  /** Events for StreamEvents and the plain GET. */
  readonly events: Feed<HubEvent>;
  /** Runs of events for /hubs/runs (StreamEvents and the plain GET), each element an item. */
  readonly eventRuns: Feed<HubEventRun>;
  /** HubClientCalls for every /hubs/runs connection's push stream. */
  readonly activityRuns: Feed<Message>;
  close(): Promise<void>;
}

export interface HubHarnessOptions {
  /** The token key; two harnesses with one key stand for two instances over one database. */
  readonly key?: Uint8Array;
  readonly hubs?: FrontOptions["hubs"];
  /**
   * How the front reaches the service: connect's router transport (default), the mesh's
   * in-process direct transport (all-in-one), or gRPC over a real service host (gateway-only).
   */
  readonly transport?: "router" | "direct" | "grpc";
}

export function newEvent(eventType: string, sourceId: string, payload: Record<string, unknown> = {}): HubEvent {
  return create(HubEventSchema, {
    id: randomBytes(8).toString("hex"),
    eventType,
    sourceId,
    timestamp: timestampNow(),
    payload: payload as never,
  });
}

export function roomActivity(roomId: string, title: string): Message {
  return create(HubClientCallSchema, {
    method: "RoomActivity",
    arguments: [anyPack(RoomSchema, create(RoomSchema, { roomId, title, memberCount: 2 }))],
  });
}

export async function startHubHarness(options: HubHarnessOptions = {}): Promise<HubHarness> {
  const key = options.key ?? randomBytes(32);
  const tokens = createHubConnectionTokens({ keys: () => [key] });
  const calls: SeenCall[] = [];
  const activity = new Feed<Message>();
  const events = new Feed<HubEvent>();
  const eventRuns = new Feed<HubEventRun>();
  const activityRuns = new Feed<Message>();
  const seen = (rpc: string, input: Message, ctx: HandlerContext) =>
    calls.push({ rpc, input, headers: ctx.requestHeader, signal: ctx.signal });

  const impl: ServiceImpl<typeof ChatHubService> = {
    async connect(input: HubConnectRequest, ctx) {
      seen("Connect", input, ctx);
      return tokens.connect(input);
    },
    async *streamChat(input: StreamChatRequest, ctx) {
      seen("StreamChat", input, ctx);
      if (input.roomId === "missing") throw new ConnectError(`room ${input.roomId} does not exist`, Code.NotFound);
      if (input.roomId === "broken") throw new ConnectError("database password=hunter2 refused", Code.Internal);
      const chunk = (type: string, content: string, note?: string): ChatChunk =>
        create(ChatChunkSchema, { type, roomId: input.roomId, content, note });
      yield chunk("start", "");
      if (input.message === "hang") {
        await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
        return;
      }
      for (let i = 0; i < Math.max(1, input.repeat); i++) {
        for (const word of input.message.split(" ")) yield chunk("content", word);
      }
      yield chunk("end", input.message, "done");
    },
    async listRooms(input, ctx) {
      seen("ListRooms", input, ctx);
      const rooms = [
        { roomId: "r1", title: "general", memberCount: 3 },
        { roomId: "r2", title: "random", memberCount: 0 },
      ];
      return { rooms: rooms.filter((r) => r.title.startsWith(input.prefix)) };
    },
    async *watchActivity(input, ctx) {
      seen("WatchActivity", input, ctx);
      yield create(HubClientCallSchema, {
        method: "ChannelStatusChanged",
        arguments: [
          anyPack(StringValueSchema, create(StringValueSchema, { value: "web" })),
          anyPack(BoolValueSchema, create(BoolValueSchema, { value: true })),
        ],
      });
      yield* activity.subscribe(ctx.signal) as AsyncGenerator<never>;
    },
    async *streamEvents(input: StreamEventsRequest, ctx) {
      seen("StreamEvents", input, ctx);
      const prefix = input.eventTypeFilter?.replace(/\*$/, "");
      for await (const event of events.subscribe(ctx.signal)) {
        if (prefix === undefined || event.eventType.startsWith(prefix)) yield event;
      }
    },
    async *streamEventRuns(input: StreamEventsRequest, ctx) {
      seen("StreamEventRuns", input, ctx);
      yield* eventRuns.subscribe(ctx.signal);
    },
    async *watchActivityRuns(input, ctx) {
      seen("WatchActivityRuns", input, ctx);
      yield* activityRuns.subscribe(ctx.signal) as AsyncGenerator<never>;
    },
  };
  const interceptors = [
    authInterceptor({
      services: [
        {
          service: ChatHubService,
          credentials: {
            apiKeys: {
              store: createApiKeyStore([
                { name: "reader", role: "User", key: KEYS.user },
                { name: "operator", role: "Operator", key: KEYS.operator },
              ]),
              roles: ["User", "Operator", "Admin"],
            },
          },
        },
      ],
    }),
  ];
  const routes = buildRoutes({ services: [{ service: ChatHubService, impl } as never], interceptors });
  let transport: Transport;
  let host: ServiceHost | undefined;
  const silent = testLogger("hub-harness");
  if (options.transport === "direct") {
    transport = createDirectTransport(routes);
  } else if (options.transport === "grpc") {
    host = await startServiceHost({ host: "127.0.0.1", port: 0, routes, logger: silent });
    transport = createGrpcClientTransport({ baseUrl: `http://127.0.0.1:${host.port}` });
  } else {
    transport = createRouterTransport((router) => router.service(ChatHubService, impl), { router: { interceptors } });
  }
  const logs: LogEntry[] = [];
  const front = createFront({
    name: "hubs",
    host: "127.0.0.1",
    port: 0,
    services: [ChatHubService],
    transport,
    logger: captureLogger(logs),
    accessLogLevel: "silent",
    hubs: options.hubs,
  });
  const { port } = await front.listen();
  return {
    front,
    port,
    url: `http://127.0.0.1:${port}`,
    logs,
    calls,
    activity,
    events,
    eventRuns,
    activityRuns,
    close: async () => {
      await front.close();
      await host?.close();
    },
  };
}

const RS = "\u001e";

/** A raw WebSocket client of a hub (ws), for tests of the protocol on the wire. */
export interface HubSocket {
  readonly ws: WebSocket;
  /** Every record received, parsed; the handshake answer included. */
  readonly records: Record<string, unknown>[];
  readonly closed: Promise<number>;
}

/** Opens a WebSocket on a hub path; rejects with the HTTP status and body when the upgrade is refused. */
export function openHubSocket(harness: HubHarness, path: string, headers: Record<string, string> = {}): Promise<HubSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${harness.port}${path}`, { headers });
    const records: Record<string, unknown>[] = [];
    let buffered = "";
    ws.on("message", (data) => {
      const parts = (buffered + data.toString()).split(RS);
      buffered = parts.pop()!;
      for (const part of parts) records.push(JSON.parse(part));
    });
    const closed = new Promise<number>((done) => ws.on("close", (code) => done(code)));
    ws.once("open", () => resolve({ ws, records, closed }));
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res.on("data", (c) => (body += c));
      res.on("end", () => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode, body })));
    });
    ws.once("error", reject);
  });
}
