// A Discord on loopback speaking its wire protocols, for the channel tests. REST under /api/v10:
// GET /gateway/bot (Authorization: Bot <token>, else 401 `{ message, code: 0 }`) answers the
// gateway's ws:// URL; POST /channels/{id}/messages records the message (content 1-2000
// characters, else 400 code 50035), with a 429 scriptable once (`retry_after` in the body, or only
// a Retry-After header). The Gateway (v10, JSON) on the same port: Hello with a small
// heartbeat_interval, op 1 answered by op 11 (ACKs can be withheld), Identify → READY (a wrong
// token closes 4004), Resume on resume_gateway_url (a different path, so tests can tell) replays
// the session's dispatches after the client's seq then sends RESUMED, or op 9 false for a session
// it does not know. Messages are MESSAGE_CREATE dispatches of the session of the newest ready
// connection (kept for a resume while that connection is gone). Tests can drop a connection, send
// op 7 / op 9, and cut everything off (an outage) until lifted; every frame received is recorded.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { type WebSocket, WebSocketServer } from "ws";

export interface DiscordMessageInput {
  channelId: string;
  authorId: string;
  content?: string;
  bot?: boolean;
  /** A webhook's message. */
  webhookId?: string;
  /** Discord's message type (0 default, 19 reply, 7 a member joined...). */
  type?: number;
}

export interface GatewayFrame {
  op: number;
  d: unknown;
}

export interface FakeGatewayConnection {
  /** "/gateway" or "/resume". */
  path: string;
  query: Record<string, string>;
  frames: GatewayFrame[];
  /** Heartbeats (op 1) left unanswered on purpose. */
  withheldAcks: number;
  /** The close code the fake saw (1006: the socket was cut without a close frame). */
  closeCode?: number;
  /** The session this connection identified or resumed. */
  sessionId?: string;
}

export interface SentDiscordMessage {
  channelId: string;
  content: string;
  message_reference?: { message_id?: string; fail_if_not_exists?: boolean };
  allowed_mentions?: unknown;
  id: string;
}

export interface FakeDiscord {
  /** Channels:Discord:ApiBaseUrl. */
  apiBaseUrl: string;
  token: string;
  /** The bot's own user id (READY user.id). */
  botId: string;
  heartbeatIntervalMs: number;
  /** When true, REST answers 401 and Identify is closed 4004. */
  refuseToken: boolean;
  /** When true, Identify is closed 4004 while REST still takes the token (a revoked gateway session). */
  refuseIdentify: boolean;
  gatewayBotCalls: number;
  connections: FakeGatewayConnection[];
  sent: SentDiscordMessage[];
  /** 429 answers given to create message. */
  rateLimited: { retryAfterSeconds: number; at: number }[];
  /** Create-message requests that came before the last 429's retry_after had passed. */
  earlyRetries: number;
  /** Dispatches MESSAGE_CREATE to the newest session; answers the message id. */
  push(message: DiscordMessageInput): string;
  /** The next `count` heartbeats get no ACK. */
  withholdAcks(count: number): void;
  /** Cuts the newest open connection (no close frame). */
  dropConnection(): void;
  /** Sends op 7 Reconnect on the newest open connection. */
  requestReconnect(): void;
  /** Sends op 9 Invalid Session with `d` on the newest open connection. */
  invalidateSession(resumable: boolean): void;
  /** The next create message answers 429: `retry_after` in the body, or only a Retry-After header. */
  rateLimitNextSend(retryAfterSeconds: number, via?: "body" | "header"): void;
  /** While on, every connection (HTTP or WebSocket) is cut at once. */
  setOutage(on: boolean): void;
  close(): Promise<void>;
}

interface Dispatch {
  s: number;
  t: string;
  d: unknown;
}

interface Session {
  id: string;
  seq: number;
  events: Dispatch[];
  socket?: WebSocket;
}

export async function startFakeDiscord(options: { token?: string; heartbeatIntervalMs?: number } = {}): Promise<FakeDiscord> {
  const token = options.token ?? "MTA-fake.discord-bot-token.XyZ123secret";
  let snowflake = 1_200_000_000_000_000_000n;
  const nextId = () => String(snowflake++);
  const sessions = new Map<string, Session>();
  let newest: Session | undefined;
  let nextSession = 1;
  let withhold = 0;
  let outage = false;
  let pendingRateLimit: { seconds: number; via: "body" | "header" } | undefined;
  let retryNotBefore = 0;
  const sockets = new Set<Socket>();
  const open = new Map<WebSocket, FakeGatewayConnection>();
  let newestSocket: WebSocket | undefined;

  const fake: FakeDiscord = {
    apiBaseUrl: "",
    token,
    botId: "1100000000000000001",
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? 200,
    refuseToken: false,
    refuseIdentify: false,
    gatewayBotCalls: 0,
    connections: [],
    sent: [],
    rateLimited: [],
    earlyRetries: 0,
    push(input) {
      const id = nextId();
      const d: Record<string, unknown> = {
        id,
        channel_id: input.channelId,
        type: input.type ?? 0,
        content: input.content ?? "",
        author: { id: input.authorId, username: `user${input.authorId}`, ...(input.bot ? { bot: true } : {}) },
        attachments: [],
        timestamp: new Date().toISOString(),
        ...(input.webhookId ? { webhook_id: input.webhookId } : {}),
      };
      if (!newest) throw new Error("fake discord: no session to push to (connect first)");
      dispatch(newest, "MESSAGE_CREATE", d);
      return id;
    },
    withholdAcks(count) {
      withhold = count;
    },
    dropConnection() {
      newestOpen()?.terminate();
    },
    requestReconnect() {
      newestOpen()?.send(JSON.stringify({ op: 7, d: null }));
    },
    invalidateSession(resumable) {
      newestOpen()?.send(JSON.stringify({ op: 9, d: resumable }));
    },
    rateLimitNextSend(seconds, via = "body") {
      pendingRateLimit = { seconds, via };
    },
    setOutage(on) {
      outage = on;
      if (!on) return;
      for (const socket of open.keys()) socket.terminate();
      for (const socket of sockets) socket.destroy();
    },
    async close() {
      for (const socket of open.keys()) socket.terminate();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  function newestOpen(): WebSocket | undefined {
    return newestSocket && open.has(newestSocket) ? newestSocket : undefined;
  }

  /** Records a dispatch in the session and sends it when the session has a connection. */
  function dispatch(session: Session, t: string, d: unknown): void {
    const event = { s: ++session.seq, t, d };
    session.events.push(event);
    session.socket?.send(JSON.stringify({ op: 0, ...event }));
  }

  // ---- REST ----
  const answer = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  };

  async function bodyOf(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    return text === "" ? undefined : JSON.parse(text);
  }

  const server = createServer((req, res) => {
    if (outage) {
      req.socket.destroy();
      return;
    }
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (req.headers.authorization !== `Bot ${token}` || fake.refuseToken)
      return answer(res, 401, { message: "401: Unauthorized", code: 0 });
    if (req.method === "GET" && url.pathname === "/api/v10/gateway/bot") {
      fake.gatewayBotCalls++;
      return answer(res, 200, {
        url: `ws://127.0.0.1:${port()}/gateway`,
        shards: 1,
        session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 },
      });
    }
    const match = /^\/api\/v10\/channels\/(\d+)\/messages$/.exec(url.pathname);
    if (req.method === "POST" && match) {
      bodyOf(req)
        .then((raw) => {
          if (Date.now() < retryNotBefore) fake.earlyRetries++;
          if (pendingRateLimit) {
            const { seconds, via } = pendingRateLimit;
            pendingRateLimit = undefined;
            fake.rateLimited.push({ retryAfterSeconds: seconds, at: Date.now() });
            // A few ms of slack: a timer may fire a little before its time.
            retryNotBefore = Date.now() + seconds * 1000 - 5;
            const body =
              via === "body"
                ? { message: "You are being rate limited.", retry_after: seconds, global: false }
                : { message: "You are being rate limited." };
            return answer(res, 429, body, { "retry-after": String(seconds), "x-ratelimit-scope": "user" });
          }
          const body = (raw ?? {}) as {
            content?: unknown;
            message_reference?: SentDiscordMessage["message_reference"];
            allowed_mentions?: unknown;
          };
          if (typeof body.content !== "string" || body.content === "" || body.content.length > 2000) {
            return answer(res, 400, {
              message: "Invalid Form Body",
              code: 50035,
              errors: { content: { _errors: [{ code: "BASE_TYPE_BAD_LENGTH" }] } },
            });
          }
          const id = nextId();
          fake.sent.push({
            channelId: match[1]!,
            content: body.content,
            message_reference: body.message_reference,
            allowed_mentions: body.allowed_mentions,
            id,
          });
          return answer(res, 200, {
            id,
            channel_id: match[1],
            content: body.content,
            type: body.message_reference ? 19 : 0,
            author: { id: fake.botId, bot: true, username: "meshwork" },
          });
        })
        .catch(() => {
          if (!res.headersSent) answer(res, 400, { message: "400: Bad Request", code: 0 });
        });
      return;
    }
    answer(res, 404, { message: "404: Not Found", code: 0 });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  // ---- Gateway ----
  const wss = new WebSocketServer({ noServer: true });
  server.on("upgrade", (req, socket, head) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const path = url.pathname.replace(/\/+$/, "");
    if (outage || (path !== "/gateway" && path !== "/resume")) {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => accept(ws, path, Object.fromEntries(url.searchParams)));
  });

  function accept(ws: WebSocket, path: string, query: Record<string, string>): void {
    const connection: FakeGatewayConnection = { path, query, frames: [], withheldAcks: 0 };
    fake.connections.push(connection);
    open.set(ws, connection);
    newestSocket = ws;
    let session: Session | undefined;
    const send = (payload: unknown) => ws.send(JSON.stringify(payload));
    ws.on("close", (code) => {
      connection.closeCode = code;
      open.delete(ws);
      if (session?.socket === ws) session.socket = undefined;
    });
    if (query.v !== "10" || query.encoding !== "json") {
      ws.close(query.v !== "10" ? 4012 : 4002, query.v !== "10" ? "Invalid API version" : "Error while decoding payload.");
      return;
    }
    send({ op: 10, d: { heartbeat_interval: fake.heartbeatIntervalMs }, s: null, t: null });

    ws.on("message", (data) => {
      let frame: GatewayFrame;
      try {
        frame = JSON.parse(data.toString()) as GatewayFrame;
      } catch {
        ws.close(4002, "Error while decoding payload.");
        return;
      }
      connection.frames.push(frame);
      if (frame.op === 1) {
        if (withhold > 0) {
          withhold--;
          connection.withheldAcks++;
        } else send({ op: 11, d: null, s: null, t: null });
        return;
      }
      if (frame.op === 2) {
        const d = frame.d as { token?: unknown; intents?: unknown };
        if (d?.token !== token || fake.refuseToken || fake.refuseIdentify) return ws.close(4004, "Authentication failed.");
        if (typeof d.intents !== "number") return ws.close(4013, "Invalid intent(s).");
        session = { id: `session-${nextSession++}`, seq: 0, events: [], socket: ws };
        sessions.set(session.id, session);
        newest = session;
        connection.sessionId = session.id;
        dispatch(session, "READY", {
          v: 10,
          user: { id: fake.botId, username: "meshwork", bot: true },
          guilds: [],
          session_id: session.id,
          resume_gateway_url: `ws://127.0.0.1:${port()}/resume`,
          application: { id: fake.botId, flags: 0 },
        });
        return;
      }
      if (frame.op === 6) {
        const d = frame.d as { token?: unknown; session_id?: unknown; seq?: unknown };
        if (d?.token !== token || fake.refuseToken) return ws.close(4004, "Authentication failed.");
        const known = typeof d.session_id === "string" ? sessions.get(d.session_id) : undefined;
        if (!known || typeof d.seq !== "number" || d.seq > known.seq) {
          send({ op: 9, d: false, s: null, t: null });
          return;
        }
        session = known;
        session.socket = ws;
        newest = session;
        connection.sessionId = session.id;
        for (const event of session.events.filter((e) => e.s > (d.seq as number))) send({ op: 0, ...event });
        dispatch(session, "RESUMED", null);
      }
    });
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = () => (server.address() as AddressInfo).port;
  fake.apiBaseUrl = `http://127.0.0.1:${port()}/api/v10`;
  return fake;
}
