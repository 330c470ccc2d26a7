// The Discord adapter: the Gateway v10 (JSON over a WebSocket) for inbound messages, the REST API
// for replies. connect = GET {ApiBaseUrl}/gateway/bot (Authorization: Bot <token>; a refused token
// is a ChannelPlatformError "refused", so 502), then `<url>/?v=10&encoding=json`: Hello, Identify
// (GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT), READY. connect answers only after READY,
// so the socket the handshake opened is the one the background loop (adapterLoop) carries on with.
//
// Heartbeats (op 1 with the last sequence) go every heartbeat_interval, the first after
// interval × a random jitter; a heartbeat due while the previous one has no ACK (op 11) means a
// zombied connection: it is dropped and resumed. Any loss resumes (op 6 on resume_gateway_url,
// with session_id and the last sequence) when the session allows it, else identifies afresh;
// op 7 Reconnect resumes at once without reporting a loss, op 9 Invalid Session resumes (d true) or
// identifies afresh (d false). A loss is host.connectionChanged(false), the next READY/RESUMED
// connectionChanged(true); attempts wait 1 s doubling to 60 s in between (reset on success).
//
// Each MESSAGE_CREATE from a person (not a bot, a webhook or this bot) with text goes to
// host.receive with the channel as the conversation and the message id as replyTo. Replies are
// POST /channels/{id}/messages split at 2000 characters, the first part referencing the inbound
// message (fail_if_not_exists false: a deleted message does not lose the reply); mentions in the
// text are not pinged (allowed_mentions parse []), so an agent cannot ping @everyone. A 429 waits
// its retry_after (platform-http.ts). The token travels only in the Authorization header and the
// Identify/Resume frames; every message leaving here has it cut out.
//
// Gateway events have no acknowledgement to hold back: a message arriving while the gateway drains
// for an update (host.receive refuses it) cannot be left for later, so it is answered with a short
// notice asking to send it again (DISCORD_DRAINING_NOTICE). A connect request on an instance not
// holding the lease only calls gateway/bot.
import { Code, ConnectError } from "@connectrpc/connect";
import { setTimeout as sleep } from "node:timers/promises";
import WebSocket from "ws";
import { adapterLoop } from "./adapter-loop.js";
import { type ChannelAdapter, type ChannelFactory, ChannelPlatformError } from "./channel-adapter.js";
import { type PlatformAnswer, platformHttp, redact } from "./platform-http.js";
import { splitMessage } from "./split-message.js";

export const DISCORD_MESSAGE_LIMIT = 2000;
/** The answer to a message that arrives while the gateway drains for an update. */
export const DISCORD_DRAINING_NOTICE = "The assistant is restarting for an update; please send that again in a minute.";
/** GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT (privileged: enable it for the bot in the developer portal). */
export const DISCORD_INTENTS = (1 << 9) | (1 << 12) | (1 << 15);
export const DISCORD_RECONNECT_FIRST_MS = 1000;
export const DISCORD_RECONNECT_MAX_MS = 60_000;
/** From opening the socket to READY / RESUMED. */
const HANDSHAKE_TIMEOUT_MS = 30_000;
/** How long a deliberate close waits for the server's close frame before dropping the socket. */
const CLOSE_WAIT_MS = 2000;

/** Close codes after which the session cannot be resumed (a fresh Identify is needed). */
const NEW_SESSION_CODES = new Set([4003, 4004, 4007, 4009, 4010, 4011, 4012, 4013, 4014]);
/** Close codes that say the bot's setup is wrong (the token, the intents): a refusal, not an outage. */
const REFUSAL_CODES = new Set([4004, 4010, 4011, 4012, 4013, 4014]);

export interface DiscordSettings {
  /** Channels:Discord:AutoConnect: the state at the first start with it configured. */
  autoConnect?: boolean;
  botToken?: string;
  apiBaseUrl: string;
  /** The first reconnect wait (default 1 s; tests make it short); it doubles up to 60 s. */
  reconnectFirstMs?: number;
}

/** The wait before reconnect attempt `attempt` (0-based): first × 2^attempt, at most 60 s. */
export function discordReconnectDelay(attempt: number, firstMs = DISCORD_RECONNECT_FIRST_MS): number {
  return Math.min(firstMs * 2 ** Math.min(attempt, 30), Math.max(DISCORD_RECONNECT_MAX_MS, firstMs));
}

interface GatewayPayload {
  op: number;
  d?: unknown;
  s?: number | null;
  t?: string | null;
}

interface DiscordMessage {
  id?: unknown;
  channel_id?: unknown;
  type?: unknown;
  webhook_id?: unknown;
  author?: { id?: unknown; bot?: unknown };
  content?: unknown;
}

/** Why a gateway connection ended (or never became ready). */
interface Ending {
  reason: string;
  /** The session may be resumed on the next connection. */
  resume: boolean;
  /** The gateway refused the bot (close codes 4004, 4010-4014). */
  refused?: boolean;
  /** A routine reconnect the gateway asked for (op 7): reconnect at once, report no loss. */
  routine?: boolean;
}

interface Connection {
  /** Undefined once READY / RESUMED arrived; the ending when the connection ended first. */
  opened: Promise<Ending | undefined>;
  ended: Promise<Ending>;
  /** A deliberate close (1000: the session ends with it); waits for the socket to close. */
  close(): Promise<void>;
}

export const createDiscordChannel: ChannelFactory<DiscordSettings> = (settings, host): ChannelAdapter => {
  const token = settings.botToken ?? "";
  const base = settings.apiBaseUrl.replace(/\/+$/, "");
  const firstDelay = settings.reconnectFirstMs ?? DISCORD_RECONNECT_FIRST_MS;
  const http = platformHttp({
    secrets: () => [token],
    onRateLimited: (label, seconds) => host.logger.warn({ call: label, retryAfterSeconds: seconds }, "discord asked to slow down (429)"),
  });
  const auth = () => ({ authorization: `Bot ${token}` });
  const clean = (text: string) => redact(text, [token]);
  /** Discord's own words (`message`, `code`), without the token should it ever echo it. */
  const said = (answer: PlatformAnswer) => {
    const body = answer.body as { message?: unknown; code?: unknown } | undefined;
    const words = typeof body?.message === "string" ? body.message : `HTTP ${answer.status}`;
    return clean(body?.code !== undefined && body.code !== 0 ? `${words} (code ${String(body.code)})` : words);
  };

  let botId: string | undefined;
  /** The gateway session, kept across connections for Resume. */
  let session: { id: string; resumeUrl: string } | undefined;
  /** The last sequence number a dispatch carried (heartbeats and Resume send it). */
  let seq: number | null = null;
  /** The connection connect()'s handshake opened, for the loop to take over. */
  let handedOver: Connection | undefined;
  let handshaking: Promise<void> | undefined;

  function fromPerson(message: DiscordMessage): boolean {
    // 0 default, 19 a reply: the text messages (others are joins, pins, boosts...).
    if (message.type !== undefined && message.type !== 0 && message.type !== 19) return false;
    if (typeof message.content !== "string" || message.content === "") return false;
    if (typeof message.id !== "string" || typeof message.channel_id !== "string") return false;
    if (message.webhook_id !== undefined && message.webhook_id !== null) return false;
    const author = message.author;
    if (!author || typeof author.id !== "string" || author.bot === true || author.id === botId) return false;
    return true;
  }

  /** Opens one gateway connection: Hello, Identify or Resume, heartbeats, dispatches. */
  function open(url: string, mode: "identify" | "resume", stop?: AbortSignal): Connection {
    let socket: WebSocket | undefined;
    let finished = false;
    let ready = false;
    /** A socket error's words, reported when the close that follows it ends the connection. */
    let failure: string | undefined;
    let heartbeat: NodeJS.Timeout | undefined;
    let awaitingAck = false;
    let resolveOpened!: (value: Ending | undefined) => void;
    let resolveEnded!: (value: Ending) => void;
    let socketClosed!: () => void;
    const opened = new Promise<Ending | undefined>((resolve) => (resolveOpened = resolve));
    const ended = new Promise<Ending>((resolve) => (resolveEnded = resolve));
    const closed = new Promise<void>((resolve) => (socketClosed = resolve));
    const onStop = () => finish({ reason: "disconnected", resume: false }, 1000);
    const handshakeTimer = setTimeout(
      () => finish({ reason: `no READY within ${HANDSHAKE_TIMEOUT_MS / 1000} s`, resume: mode === "resume" }, "drop"),
      HANDSHAKE_TIMEOUT_MS,
    );

    function sendFrame(payload: GatewayPayload): void {
      if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify(payload), () => {});
    }

    function beat(): void {
      awaitingAck = true;
      sendFrame({ op: 1, d: seq });
    }

    function tick(interval: number): void {
      if (awaitingAck) {
        // Discord's rule: a heartbeat without an ACK before the next one is due is a zombied
        // connection. Nothing would answer a close frame: drop it (the session stays resumable).
        // Judged after the socket's pending input is read (setImmediate runs after the poll
        // phase): an event loop that stalled past the ACK is not a zombied connection.
        setImmediate(() => {
          if (finished) return;
          if (awaitingAck) finish({ reason: "the gateway did not acknowledge a heartbeat", resume: true }, "drop");
          else tick(interval);
        });
        return;
      }
      beat();
      heartbeat = setTimeout(() => tick(interval), interval);
    }

    function handle(payload: GatewayPayload): void {
      switch (payload.op) {
        case 10: {
          const interval = (payload.d as { heartbeat_interval?: unknown } | undefined)?.heartbeat_interval;
          if (typeof interval !== "number" || !(interval > 0) || heartbeat) return;
          heartbeat = setTimeout(() => tick(interval), interval * Math.random());
          if (mode === "resume" && session) {
            sendFrame({ op: 6, d: { token, session_id: session.id, seq } });
          } else {
            session = undefined;
            seq = null;
            sendFrame({
              op: 2,
              d: { token, intents: DISCORD_INTENTS, properties: { os: process.platform, browser: "meshwork", device: "meshwork" } },
            });
          }
          return;
        }
        case 11:
          awaitingAck = false;
          return;
        case 1:
          beat();
          return;
        case 7:
          // Not 1000: that would end the session, which the next connection resumes.
          finish({ reason: "the gateway asked to reconnect (op 7)", resume: true, routine: true }, 4000);
          return;
        case 9: {
          const resumable = payload.d === true;
          const reason = `the gateway invalidated the session (op 9, ${resumable ? "resumable" : "not resumable"})`;
          finish({ reason, resume: resumable }, resumable ? 4000 : 1000);
          return;
        }
        case 0:
          if (typeof payload.s === "number") seq = payload.s;
          dispatch(payload.t ?? "", payload.d);
          return;
      }
    }

    function dispatch(type: string, data: unknown): void {
      if (type === "READY") {
        const d = data as { session_id?: unknown; resume_gateway_url?: unknown; user?: { id?: unknown } } | undefined;
        if (typeof d?.session_id === "string" && typeof d.resume_gateway_url === "string") {
          session = { id: d.session_id, resumeUrl: d.resume_gateway_url };
        }
        if (typeof d?.user?.id === "string") botId = d.user.id;
        markReady();
      } else if (type === "RESUMED") {
        markReady();
      } else if (type === "MESSAGE_CREATE") {
        // Replayed messages (before RESUMED) count too: they were missed while away.
        const message = (data ?? {}) as DiscordMessage;
        if (!fromPerson(message)) return;
        const taken = host.receive({
          channelType: "discord",
          conversationId: message.channel_id as string,
          senderId: (message.author as { id: string }).id,
          text: message.content as string,
          replyTo: message.id as string,
        });
        if (!taken) {
          // Draining: the gateway has no way to leave an event for later, so the sender is told.
          adapter.send(message.channel_id as string, DISCORD_DRAINING_NOTICE, message.id as string).catch((error: unknown) => {
            host.logger.warn({ channelType: "discord", err: redact(describe(error), [token]) }, "the draining notice could not be sent");
          });
        }
      }
    }

    function markReady(): void {
      if (ready) return;
      ready = true;
      clearTimeout(handshakeTimer);
      resolveOpened(undefined);
    }

    /** Ends the connection once: a number closes the socket with that code, "drop" cuts it. */
    function finish(ending: Ending, how?: number | "drop"): void {
      if (finished) return;
      finished = true;
      clearTimeout(heartbeat);
      clearTimeout(handshakeTimer);
      stop?.removeEventListener("abort", onStop);
      if (socket && how !== undefined) {
        if (how === "drop" || socket.readyState === WebSocket.CONNECTING) socket.terminate();
        else if (socket.readyState === WebSocket.OPEN) {
          socket.close(how);
          // A server that never answers the close frame does not hold the socket open.
          const current = socket;
          const cut = setTimeout(() => current.terminate(), CLOSE_WAIT_MS);
          current.once("close", () => clearTimeout(cut));
        }
      }
      const final = { ...ending, reason: clean(ending.reason) };
      resolveOpened(ready ? undefined : final);
      resolveEnded(final);
    }

    try {
      socket = new WebSocket(`${url.replace(/\/+$/, "")}/?v=10&encoding=json`, { handshakeTimeout: HANDSHAKE_TIMEOUT_MS });
    } catch (error) {
      // Not a ws:// or wss:// URL: gateway/bot answered something this cannot use.
      socketClosed();
      finish({ reason: `the gateway URL is not usable (${describe(error)})`, resume: false });
      return { opened, ended, close: async () => {} };
    }
    socket.on("close", (code, why) => {
      socketClosed();
      const words = why.toString("utf8");
      finish({
        reason: failure ?? `the gateway closed the connection (${code}${words ? ` ${words}` : ""})`,
        resume: !NEW_SESSION_CODES.has(code),
        refused: REFUSAL_CODES.has(code),
      });
    });
    // ws emits "close" after an error: the connection ends there, with these words.
    socket.on("error", (error) => {
      failure ??= `the gateway connection failed: ${describe(error)}`;
    });
    socket.on("message", (data, isBinary) => {
      if (finished || isBinary) return;
      let payload: GatewayPayload;
      try {
        payload = JSON.parse(data.toString()) as GatewayPayload;
      } catch {
        return;
      }
      if (payload && typeof payload === "object") handle(payload);
    });
    if (stop?.aborted) onStop();
    else stop?.addEventListener("abort", onStop, { once: true });

    return {
      opened,
      ended,
      async close() {
        finish({ reason: "disconnected", resume: false }, 1000);
        await closed;
      },
    };
  }

  async function gatewayUrl(signal?: AbortSignal): Promise<string> {
    const answer = await http({ label: "discord gateway/bot", url: `${base}/gateway/bot`, headers: auth(), signal });
    const url = (answer.body as { url?: unknown } | undefined)?.url;
    if (answer.status !== 200 || typeof url !== "string" || url === "") {
      // 401/403: a token Discord does not take; 5xx: Discord is not answering properly.
      throw new ChannelPlatformError(
        `discord gateway/bot: ${answer.status} ${said(answer)}`,
        answer.status >= 500 ? "unreachable" : "refused",
      );
    }
    return url;
  }

  /** A connection that reached READY / RESUMED, or why the attempt failed. */
  async function attempt(stop?: AbortSignal): Promise<Connection | Ending> {
    const resumeUrl = session?.resumeUrl;
    const connection = resumeUrl ? open(resumeUrl, "resume", stop) : open(await gatewayUrl(stop), "identify", stop);
    return (await connection.opened) ?? connection;
  }

  async function handshake(): Promise<void> {
    handshaking ??= (async () => {
      session = undefined;
      seq = null;
      const result = await attempt();
      if (!("opened" in result)) {
        throw new ChannelPlatformError(`discord gateway: ${result.reason}`, result.refused ? "refused" : "unreachable");
      }
      await handedOver?.close();
      handedOver = result;
    })().finally(() => {
      handshaking = undefined;
    });
    await handshaking;
  }

  async function run(stop: AbortSignal): Promise<void> {
    let connection = handedOver;
    handedOver = undefined;
    let up = true;
    let failures = 0;
    let reconnectAtOnce = false;
    const lost = (reason: string) => {
      if (!up) return;
      up = false;
      host.logger.warn(
        { channelType: "discord", err: reason },
        "the discord gateway connection was lost; reconnecting (1 s doubling to 60 s)",
      );
      host.connectionChanged(false, reason);
    };
    while (!stop.aborted) {
      if (connection) {
        const current = connection;
        const onStop = () => void current.close();
        stop.addEventListener("abort", onStop, { once: true });
        const ending = await current.ended;
        stop.removeEventListener("abort", onStop);
        if (stop.aborted) {
          await current.close();
          return;
        }
        connection = undefined;
        if (!ending.resume) session = undefined;
        reconnectAtOnce = ending.routine === true && up;
        if (!reconnectAtOnce) lost(ending.reason);
      }
      if (!reconnectAtOnce) {
        await sleep(discordReconnectDelay(failures, firstDelay), undefined, { signal: stop }).catch(() => {});
        if (stop.aborted) return;
        failures++;
      }
      reconnectAtOnce = false;
      let result: Connection | Ending;
      try {
        result = await attempt(stop);
      } catch (error) {
        if (stop.aborted) return;
        lost(clean(describe(error)));
        continue;
      }
      if (stop.aborted) {
        if ("opened" in result) await result.close();
        return;
      }
      if (!("opened" in result)) {
        if (!result.resume) session = undefined;
        lost(result.reason);
        continue;
      }
      connection = result;
      failures = 0;
      if (!up) {
        up = true;
        host.connectionChanged(true);
      }
    }
    if (connection) await connection.close();
  }

  const adapter: ChannelAdapter = {
    type: "discord",
    displayName: "Discord",
    connectedAtStart: settings.autoConnect ?? false,
    missingSetting: () => (token === "" ? "Channels:Discord:BotToken" : undefined),

    ...adapterLoop(handshake, run),
    check: async () => void (await gatewayUrl()),

    async send(conversationId, content, replyTo) {
      // A channel id is a snowflake: anything else is the caller's mistake (and must not reach the URL path).
      if (!/^\d{1,20}$/.test(conversationId)) {
        throw new ConnectError("a Discord conversation id is a channel id (digits)", Code.InvalidArgument);
      }
      let lastId = "";
      let first = true;
      for (const part of splitMessage(content, DISCORD_MESSAGE_LIMIT)) {
        const reference = first && replyTo !== undefined && /^\d{1,20}$/.test(replyTo) ? replyTo : undefined;
        first = false;
        const answer = await http({
          label: "discord create message",
          url: `${base}/channels/${conversationId}/messages`,
          headers: auth(),
          body: {
            content: part,
            allowed_mentions: { parse: [], replied_user: true },
            ...(reference !== undefined ? { message_reference: { message_id: reference, fail_if_not_exists: false } } : {}),
          },
        });
        const id = (answer.body as { id?: unknown } | undefined)?.id;
        if (answer.status !== 200 || typeof id !== "string") {
          throw new ChannelPlatformError(
            `discord create message: ${answer.status} ${said(answer)}`,
            answer.status >= 500 ? "unreachable" : "refused",
          );
        }
        lastId = id;
      }
      return lastId;
    },
  };
  return adapter;
};

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
