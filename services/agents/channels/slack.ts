// The Slack adapter, over Socket Mode (no public URL needed). connect = `auth.test` with the bot
// token (the handshake; it also names the bot's own user, whose messages are ignored), then
// `apps.connections.open` with the app-level token and the WebSocket it answers, up to Slack's
// `{ type: "hello" }`: connect answers only once events can flow, so a wrong app token is a 502 at
// connect rather than a channel that says connected and hears nothing. That first socket is handed
// to the background loop (adapterLoop); connects in flight are shared so two never open two sockets.
//
// On the socket, every frame carrying an `envelope_id` is acked at once with `{ envelope_id }`
// (as soon as the event is handed on, before its turn runs; an unacked envelope is redelivered), but
// for a message refused while the gateway drains for an update: that envelope is not acked, so
// Slack delivers it again later (its retries: a few, minutes apart), to whichever instance then
// runs the adapter; once Slack's retries are over, the message is lost. `events_api` envelopes with a
// `message` event from a person (no `bot_id`, no `subtype`, not the bot's own user, with text) go
// to host.receive: the channel id is the conversation, `thread_ts ?? ts` the replyTo. Redeliveries
// (Slack retries an envelope whose ack it missed, e.g. across a reconnect) are dropped by the
// message's channel + ts. `{ type: "disconnect" }` (Slack refreshing the link) opens a new socket
// at once and closes the old one after, which is not a loss. A socket that closes otherwise, or
// stops answering pings, is a platform-side loss: connectionChanged(false), then new connections
// 1 s, 2 s, 4 s … 60 s apart until one says hello (connectionChanged(true)).
//
// Replies are `chat.postMessage { channel, text, thread_ts }` (bot token), split at 4000 characters
// (every part in the thread). Slack's text is markup where `&`, `<` and `>` are control characters:
// they are sent escaped (`&amp;` `&lt;` `&gt;`, what Slack's docs ask) so people see what the agent
// wrote, and inbound text is unescaped for the agent; the split counts the unescaped text. The Web
// API answers refusals as HTTP 200 `{ ok: false, error }` (invalid_auth → ChannelPlatformError
// "refused") and a 429 with Retry-After (waited out by platform-http). Tokens travel only in the
// Authorization header, and the socket URL (its ticket) is cut out of any message like them.
import { setTimeout as sleep } from "node:timers/promises";
import WebSocket from "ws";
import { type ChannelAdapter, type ChannelFactory, ChannelPlatformError } from "./channel-adapter.js";
import { adapterLoop } from "./adapter-loop.js";
import { type PlatformAnswer, platformHttp, redact } from "./platform-http.js";
import { splitMessage } from "./split-message.js";

export const SLACK_MESSAGE_LIMIT = 4000;
export const SLACK_RECONNECT_MIN_MS = 1000;
export const SLACK_RECONNECT_MAX_MS = 60_000;
/** How long a new socket may take to say hello. */
const HELLO_TIMEOUT_MS = 30_000;
/** How many recent messages are remembered to drop redeliveries. */
const SEEN_LIMIT = 1000;

export interface SlackSettings {
  /** Channels:Slack:AutoConnect: the state at the first start with it configured. */
  autoConnect?: boolean;
  botToken?: string;
  appToken?: string;
  apiBaseUrl: string;
  /**
   * Not a setting: how often the socket is pinged; a socket that answered nothing (no pong, no
   * frame) since the last ping is dropped as lost. Default 30 s; tests shorten it.
   */
  pingIntervalMs?: number;
}

interface WebApiAnswer {
  ok?: boolean;
  error?: string;
  user_id?: string;
  url?: string;
  ts?: string;
}

interface SlackMessageEvent {
  type?: string;
  channel?: unknown;
  user?: unknown;
  text?: unknown;
  ts?: unknown;
  thread_ts?: unknown;
  bot_id?: unknown;
  subtype?: unknown;
}

/** How an open socket ended: Slack asked for a new one (`refresh`), or it was lost. */
type SessionEnd = { kind: "refresh"; reason: string } | { kind: "lost"; reason: string };

interface Session {
  ended: Promise<SessionEnd>;
  /** Closes the socket (normal closure) and answers once it is closed. */
  close(): Promise<void>;
}

/** Slack's three control characters as entities, and back. */
export function slackEscape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
export function slackUnescape(text: string): string {
  return text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

export const createSlackChannel: ChannelFactory<SlackSettings> = (settings, host): ChannelAdapter => {
  const botToken = settings.botToken ?? "";
  const appToken = settings.appToken ?? "";
  const base = settings.apiBaseUrl.replace(/\/+$/, "");
  const pingMs = settings.pingIntervalMs ?? 30_000;
  /** The socket URLs handed out (their tickets are credentials for a while): cut out like tokens. */
  const socketUrls = new Set<string>();
  const secrets = () => [botToken, appToken, ...socketUrls];
  const clean = (text: string) => redact(text, secrets());
  const http = platformHttp({
    secrets,
    onRateLimited: (label, seconds) => host.logger.warn({ call: label, retryAfterSeconds: seconds }, "slack asked to slow down (429)"),
  });

  let ownUserId: string | undefined;
  /** The socket connect opened, waiting for the loop to take it. */
  let handedOver: Session | undefined;
  const seen = new Set<string>();

  async function webApi(method: string, token: string, body?: unknown, signal?: AbortSignal): Promise<WebApiAnswer> {
    const answer: PlatformAnswer = await http({
      label: `slack ${method}`,
      url: `${base}/${method}`,
      method: "POST",
      body,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json; charset=utf-8" }),
      },
      signal,
    });
    const parsed = answer.body as WebApiAnswer | undefined;
    if (answer.status !== 200 || !parsed?.ok) {
      const why = clean(String(parsed?.error ?? `HTTP ${answer.status}`));
      // 5xx: Slack could not do it (unreachable); a 200 `ok: false` or a 4xx: it refused.
      throw new ChannelPlatformError(`slack ${method}: ${why}`, answer.status >= 500 ? "unreachable" : "refused");
    }
    return parsed;
  }

  async function authTest(): Promise<void> {
    const answer = await webApi("auth.test", botToken);
    if (typeof answer.user_id !== "string") throw new ChannelPlatformError("slack auth.test: the answer names no user", "refused");
    ownUserId = answer.user_id;
  }

  /** Hands a person's message on; answers false when it was refused (draining), true otherwise. */
  function handleEvent(event: SlackMessageEvent | undefined): boolean {
    if (event?.type !== "message") return true;
    if (event.subtype !== undefined || event.bot_id !== undefined) return true;
    const { channel, user, text, ts } = event;
    if (typeof channel !== "string" || typeof user !== "string" || typeof ts !== "string") return true;
    if (typeof text !== "string" || text === "" || user === ownUserId) return true;
    const key = `${channel}/${ts}`;
    if (seen.has(key)) return true;
    const taken = host.receive({
      channelType: "slack",
      conversationId: channel,
      senderId: user,
      text: slackUnescape(text),
      replyTo: typeof event.thread_ts === "string" && event.thread_ts !== "" ? event.thread_ts : ts,
    });
    if (!taken) return false;
    seen.add(key);
    if (seen.size > SEEN_LIMIT) seen.delete(seen.values().next().value as string);
    return true;
  }

  /** apps.connections.open, the WebSocket, and its hello; throws ChannelPlatformError when any fails. */
  async function openSession(signal?: AbortSignal): Promise<Session> {
    const { url } = await webApi("apps.connections.open", appToken, undefined, signal);
    if (typeof url !== "string" || !/^wss?:\/\//.test(url)) {
      throw new ChannelPlatformError("slack apps.connections.open: the answer has no socket URL", "refused");
    }
    socketUrls.add(url);
    let ws: WebSocket;
    try {
      ws = new WebSocket(url, { handshakeTimeout: HELLO_TIMEOUT_MS });
    } catch {
      throw new ChannelPlatformError("slack apps.connections.open: the socket URL is not valid", "refused");
    }
    let end: SessionEnd | undefined;
    let finish!: (end: SessionEnd) => void;
    const ended = new Promise<SessionEnd>((resolve) => {
      finish = (value) => {
        end ??= value;
        resolve(end);
      };
    });
    let hello!: () => void;
    const helloSaid = new Promise<void>((resolve) => {
      hello = resolve;
    });
    let alive = true;
    let lastError: string | undefined;
    let pinger: NodeJS.Timeout | undefined;
    /** Pings start with the hello, so a slow hello is judged by its own timeout. */
    const keepAlive = () => {
      pinger ??= setInterval(() => {
        if (!alive) {
          lastError = "the socket answered no ping";
          ws.terminate();
          return;
        }
        alive = false;
        ws.ping();
      }, pingMs);
      pinger.unref();
    };

    // Slack pings too (ws answers those itself): any sign of the peer counts.
    const heard = () => {
      alive = true;
    };
    ws.on("pong", heard);
    ws.on("ping", heard);
    ws.on("message", (data) => {
      alive = true;
      let frame: { envelope_id?: unknown; type?: unknown; reason?: unknown; payload?: { event?: SlackMessageEvent } };
      try {
        frame = JSON.parse(String(data));
      } catch {
        return;
      }
      if (typeof frame !== "object" || frame === null) return;
      // A message refused while draining is not acked: Slack sends the envelope again later.
      const taken = frame.type !== "events_api" || handleEvent(frame.payload?.event);
      if (typeof frame.envelope_id === "string" && taken) ws.send(JSON.stringify({ envelope_id: frame.envelope_id }));
      if (frame.type === "hello") {
        keepAlive();
        hello();
      } else if (frame.type === "disconnect")
        finish({ kind: "refresh", reason: `slack asked to reconnect (${String(frame.reason ?? "")})` });
    });
    ws.on("error", (error) => {
      lastError = clean(error.message);
    });
    const closed = new Promise<void>((resolve) => {
      ws.once("close", (code) => {
        clearInterval(pinger);
        socketUrls.delete(url);
        finish({ kind: "lost", reason: lastError ?? `the socket closed (code ${code})` });
        resolve();
      });
    });
    const session: Session = {
      ended,
      async close() {
        finish({ kind: "refresh", reason: "closed here" });
        if (ws.readyState === WebSocket.CLOSED) return;
        if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
        else ws.close(1000);
        // A peer that never answers the close frame: cut the socket.
        const cut = setTimeout(() => ws.terminate(), 2000);
        await closed;
        clearTimeout(cut);
      },
    };

    const timeout = AbortSignal.timeout(HELLO_TIMEOUT_MS);
    const waits = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const gaveUp = new Promise<"gave up">((resolve) => {
      if (waits.aborted) resolve("gave up");
      waits.addEventListener("abort", () => resolve("gave up"), { once: true });
    });
    const first = await Promise.race([helloSaid.then(() => "hello" as const), ended, gaveUp]);
    if (first === "hello") return session;
    await session.close();
    if (signal?.aborted) throw signal.reason;
    const why = first === "gave up" ? "no hello from the socket" : first.reason;
    throw new ChannelPlatformError(`slack socket: ${why}`, "unreachable");
  }

  async function handshake(): Promise<void> {
    await authTest();
    const session = await openSession();
    const previous = handedOver;
    handedOver = session;
    await previous?.close();
  }

  async function run(stop: AbortSignal): Promise<void> {
    let session = handedOver;
    handedOver = undefined;
    let previous: Session | undefined;
    let up = true;
    let delay = SLACK_RECONNECT_MIN_MS;
    const stopped = new Promise<"stopped">((resolve) => stop.addEventListener("abort", () => resolve("stopped"), { once: true }));
    const lost = async (reason: string) => {
      if (up) {
        up = false;
        host.logger.warn({ channelType: "slack", err: reason }, "the slack socket was lost; reconnecting (1 s doubling to 60 s)");
        host.connectionChanged(false, reason);
      }
      await sleep(delay, undefined, { signal: stop }).catch(() => {});
      delay = Math.min(delay * 2, SLACK_RECONNECT_MAX_MS);
    };
    while (!stop.aborted) {
      if (!session) {
        let failure = "";
        try {
          session = await openSession(stop);
        } catch (error) {
          failure = clean(error instanceof Error ? error.message : String(error));
        }
        // The socket Slack asked to replace stays open until the new one is up (or failed).
        await previous?.close();
        previous = undefined;
        if (stop.aborted) break;
        if (!session) {
          await lost(failure);
          continue;
        }
        delay = SLACK_RECONNECT_MIN_MS;
        if (!up) {
          up = true;
          host.connectionChanged(true);
        }
      }
      const end = await Promise.race([session.ended, stopped]);
      if (end === "stopped") break;
      if (end.kind === "refresh") {
        host.logger.info({ channelType: "slack", reason: end.reason }, "slack asked for a new socket");
        previous = session;
        session = undefined;
      } else {
        session = undefined;
        await lost(end.reason);
      }
    }
    await previous?.close();
    await session?.close();
  }

  const loop = adapterLoop(handshake, run);
  let connecting: Promise<void> | undefined;

  return {
    type: "slack",
    displayName: "Slack",
    connectedAtStart: settings.autoConnect ?? false,
    check: () => authTest(),
    missingSetting: () => (botToken === "" ? "Channels:Slack:BotToken" : appToken === "" ? "Channels:Slack:AppToken" : undefined),

    connect() {
      connecting ??= loop.connect().finally(() => {
        connecting = undefined;
      });
      return connecting;
    },
    async disconnect() {
      await connecting?.catch(() => {});
      await loop.disconnect();
    },

    async send(conversationId, content, replyTo) {
      let lastTs = "";
      for (const part of splitMessage(content, SLACK_MESSAGE_LIMIT)) {
        const answer = await webApi("chat.postMessage", botToken, {
          channel: conversationId,
          text: slackEscape(part),
          ...(replyTo ? { thread_ts: replyTo } : {}),
        });
        lastTs = String(answer.ts ?? "");
      }
      return lastTs;
    },
  };
};
