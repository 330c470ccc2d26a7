// A Slack on loopback speaking its wire protocols, for the channel tests. The Web API under
// `<url>` (POST `/auth.test`, `/apps.connections.open`, `/chat.postMessage`; the token as
// `Authorization: Bearer`; refusals as HTTP 200 `{ ok: false, error }` the way Slack answers them,
// a 429 with Retry-After scriptable once) and Socket Mode: apps.connections.open answers a
// single-use `ws://127.0.0.1:<port>/link/?ticket=…` URL; the socket says `{ type: "hello" }`, then
// carries `events_api` envelopes pushed by the test, to the newest open socket as Slack gives an
// event to one of an app's connections. Every frame a client sends is recorded per socket (the
// acks), and how each socket ended. `requestDisconnect` sends Slack's `{ type: "disconnect" }`
// (the link refresh) and leaves closing to the client; `dropSockets` cuts every socket without a
// close frame; `setOutage` also cuts every HTTP request and upgrade while on; `answerPings: false`
// makes a link that stays open but answers no ping.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { type WebSocket, WebSocketServer } from "ws";

export interface SlackMessageInput {
  channel: string;
  user: string;
  text?: string;
  threadTs?: string;
  botId?: string;
  subtype?: string;
  /** Redeliver: the same message (same ts) as a retry of an earlier envelope. */
  ts?: string;
}

export interface FakeSlackSocket {
  id: number;
  /** Every frame the client sent, parsed. */
  received: unknown[];
  /** The envelopes sent to it. */
  envelopes: string[];
  open: boolean;
  /** `client`: a close frame from the client; `server`: cut here (dropSockets, outage, close). */
  closedBy?: "client" | "server";
  closeCode?: number;
}

export interface PostedSlackMessage {
  channel: string;
  text: string;
  thread_ts?: string;
  ts: string;
}

export interface FakeSlack {
  /** The ApiBaseUrl to configure (like https://slack.com/api). */
  url: string;
  botToken: string;
  appToken: string;
  /** The bot's own user id (auth.test `user_id`). */
  botUserId: string;
  /** auth.test and chat.postMessage answer `invalid_auth`. */
  refuseBotToken: boolean;
  /** apps.connections.open answers `invalid_auth`. */
  refuseAppToken: boolean;
  authTests: number;
  /** apps.connections.open calls answered with a URL. */
  opens: number;
  /** HTTP requests and upgrades cut by the outage. */
  cutByOutage: number;
  sockets: FakeSlackSocket[];
  /** What happened to the sockets, in order: `open 1`, `close 1 client` … */
  timeline: string[];
  posted: PostedSlackMessage[];
  /** 429s given to chat.postMessage, with their Retry-After. */
  rateLimited: number[];
  /** Sends a message event to the newest open socket; answers its envelope id and ts. */
  push(message: SlackMessageInput): { envelopeId: string; ts: string };
  /** Sends `text` as is on the newest open socket (malformed frames). */
  sendRaw(text: string): void;
  /** The next chat.postMessage answers 429 with this Retry-After. */
  rateLimitNextPost(retryAfterSeconds: number): void;
  /** Sends `{ type: "disconnect", reason }` on every open socket. */
  requestDisconnect(reason?: string): void;
  /** Cuts every open socket (no close frame). */
  dropSockets(): void;
  setOutage(on: boolean): void;
  close(): Promise<void>;
}

export interface FakeSlackOptions {
  /** false: the sockets never answer a ping (a link gone silent); default true. */
  answerPings?: boolean;
}

export async function startFakeSlack(options: FakeSlackOptions = {}): Promise<FakeSlack> {
  const botToken = "xoxb-1111-2222-FAKEBOTTOKENsecret";
  const appToken = "xapp-1-A0001-3333-FAKEAPPTOKENsecret";
  const tickets = new Set<string>();
  const live = new Map<FakeSlackSocket, WebSocket>();
  const sockets = new Set<Socket>();
  let outage = false;
  let pendingRateLimit: number | undefined;
  let clock = 1_700_000_000;
  let seq = 0;
  const nextTs = () => `${clock++}.${String(++seq).padStart(6, "0")}`;

  const fake: FakeSlack = {
    url: "",
    botToken,
    appToken,
    botUserId: "U0BOTSELF",
    refuseBotToken: false,
    refuseAppToken: false,
    authTests: 0,
    opens: 0,
    cutByOutage: 0,
    sockets: [],
    timeline: [],
    posted: [],
    rateLimited: [],
    push(input) {
      const target = [...live].filter(([s]) => s.open).at(-1);
      if (!target) throw new Error("fake slack: no open socket to push to");
      const [record, ws] = target;
      const ts = input.ts ?? nextTs();
      const event: Record<string, unknown> = {
        type: "message",
        channel: input.channel,
        user: input.user,
        ts,
        event_ts: ts,
        channel_type: input.channel.startsWith("D") ? "im" : "channel",
      };
      if (input.text !== undefined) event.text = input.text;
      if (input.threadTs !== undefined) event.thread_ts = input.threadTs;
      if (input.botId !== undefined) event.bot_id = input.botId;
      if (input.subtype !== undefined) event.subtype = input.subtype;
      const envelopeId = randomUUID();
      record.envelopes.push(envelopeId);
      ws.send(
        JSON.stringify({
          envelope_id: envelopeId,
          type: "events_api",
          accepts_response_payload: false,
          retry_attempt: input.ts === undefined ? 0 : 1,
          retry_reason: input.ts === undefined ? "" : "timeout",
          payload: {
            token: "verification-token",
            team_id: "T0001",
            api_app_id: "A0001",
            type: "event_callback",
            event_id: `Ev${seq}`,
            event_time: clock,
            event,
          },
        }),
      );
      return { envelopeId, ts };
    },
    sendRaw(text) {
      const target = [...live].filter(([s]) => s.open).at(-1);
      if (!target) throw new Error("fake slack: no open socket to send on");
      target[1].send(text);
    },
    rateLimitNextPost(seconds) {
      pendingRateLimit = seconds;
    },
    requestDisconnect(reason = "refresh_requested") {
      for (const [record, ws] of live) {
        if (record.open) ws.send(JSON.stringify({ type: "disconnect", reason, debug_info: { host: "fake-slack" } }));
      }
    },
    dropSockets() {
      for (const [record, ws] of live) {
        if (!record.open) continue;
        record.closedBy ??= "server";
        ws.terminate();
      }
    },
    setOutage(on) {
      outage = on;
      if (on) {
        fake.dropSockets();
        for (const socket of sockets) socket.destroy();
      }
    },
    async close() {
      fake.dropSockets();
      for (const socket of sockets) socket.destroy();
      wss.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const answer = (res: ServerResponse, body: unknown, status = 200, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
    res.end(JSON.stringify(body));
  };

  async function bodyOf(req: IncomingMessage): Promise<Record<string, unknown>> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    if (text === "") return {};
    if ((req.headers["content-type"] ?? "").includes("application/json")) return JSON.parse(text);
    return Object.fromEntries(new URLSearchParams(text));
  }

  const server = createServer((req, res) => {
    if (outage) {
      fake.cutByOutage++;
      req.socket.destroy();
      return;
    }
    const method = new URL(req.url ?? "/", "http://127.0.0.1").pathname.replace(/^\//, "");
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    bodyOf(req)
      .then((params) => {
        if (req.method !== "POST") return answer(res, { ok: false, error: "method_not_supported_for_channel_type" });
        if (bearer === undefined) return answer(res, { ok: false, error: "not_authed" });
        if (method === "auth.test") {
          fake.authTests++;
          if (bearer !== botToken || fake.refuseBotToken) return answer(res, { ok: false, error: "invalid_auth" });
          return answer(res, {
            ok: true,
            url: "https://fake.slack.com/",
            team: "Fake",
            user: "meshwork",
            team_id: "T0001",
            user_id: fake.botUserId,
            bot_id: "B0BOTSELF",
          });
        }
        if (method === "apps.connections.open") {
          if (bearer === botToken) return answer(res, { ok: false, error: "not_allowed_token_type" });
          if (bearer !== appToken || fake.refuseAppToken) return answer(res, { ok: false, error: "invalid_auth" });
          const ticket = randomUUID();
          tickets.add(ticket);
          fake.opens++;
          const port = (server.address() as AddressInfo).port;
          return answer(res, { ok: true, url: `ws://127.0.0.1:${port}/link/?ticket=${ticket}&app_id=A0001` });
        }
        if (method === "chat.postMessage") {
          if (bearer !== botToken || fake.refuseBotToken) return answer(res, { ok: false, error: "invalid_auth" });
          if (pendingRateLimit !== undefined) {
            const retryAfter = pendingRateLimit;
            pendingRateLimit = undefined;
            fake.rateLimited.push(retryAfter);
            return answer(res, { ok: false, error: "ratelimited" }, 429, { "retry-after": String(retryAfter) });
          }
          if (typeof params.channel !== "string" || params.channel === "") return answer(res, { ok: false, error: "channel_not_found" });
          if (typeof params.text !== "string" || params.text === "") return answer(res, { ok: false, error: "no_text" });
          if (params.text.length > 40_000) return answer(res, { ok: false, error: "msg_too_long" });
          const ts = nextTs();
          fake.posted.push({
            channel: params.channel,
            text: params.text,
            ...(typeof params.thread_ts === "string" ? { thread_ts: params.thread_ts } : {}),
            ts,
          });
          return answer(res, { ok: true, channel: params.channel, ts, message: { type: "message", text: params.text, ts } });
        }
        return answer(res, { ok: false, error: "unknown_method" }, 404);
      })
      .catch(() => {
        if (!res.headersSent) answer(res, { ok: false, error: "invalid_json" });
      });
  });

  const wss = new WebSocketServer({ noServer: true, autoPong: options.answerPings ?? true });
  server.on("upgrade", (req, socket, head) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const ticket = url.searchParams.get("ticket") ?? "";
    if (outage) {
      fake.cutByOutage++;
      socket.destroy();
      return;
    }
    if (url.pathname !== "/link/" || !tickets.delete(ticket)) {
      socket.end("HTTP/1.1 401 Unauthorized\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const record: FakeSlackSocket = { id: fake.sockets.length + 1, received: [], envelopes: [], open: true };
      fake.sockets.push(record);
      live.set(record, ws);
      fake.timeline.push(`open ${record.id}`);
      ws.on("message", (data) => {
        try {
          record.received.push(JSON.parse(String(data)));
        } catch {
          record.received.push(String(data));
        }
      });
      ws.on("close", (code) => {
        record.open = false;
        record.closedBy ??= "client";
        record.closeCode = code;
        fake.timeline.push(`close ${record.id} ${record.closedBy}`);
        live.delete(record);
      });
      ws.send(
        JSON.stringify({
          type: "hello",
          num_connections: live.size,
          debug_info: { host: "fake-slack", approximate_connection_time: 18060 },
          connection_info: { app_id: "A0001" },
        }),
      );
    });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
