// The bridge: a WebSocket client (the `ws` package; Node 20 has no global WebSocket without a flag)
// of a third-party chat gateway at Bridge:Url. Frames are JSON: `{ type: "req", id, method, params }`,
// `{ type: "res", id, ok, payload | error }`, `{ type: "event", event, payload }`. The first request
// is `connect` `{ minProtocol: 3, maxProtocol: 3, role: "operator", auth: { token } }`; the bridge is
// connected once it is answered `ok: true`. A lost or refused connection is tried again after 1 s,
// doubling up to 30 s (back to 1 s after a good connect). A `chat` event is observed (Passthrough:
// one audit entry each) or, for a channel in Intercept mode, answered with a Meshwork agent turn
// sent back as the request `chat.send`. The token is never logged; a refusal is logged by its text.
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import type { BridgeMode } from "./bridge.js";

export const PROTOCOL_VERSION = 3;

/** A `chat` event as the bridge reads it: the channel and conversation it came from and its text. */
export interface BridgeChat {
  channel: string;
  /** The conversation key the gateway gave (`sessionKey`, else `conversationId`, else `chatId`). */
  conversation: string;
  text: string;
  /** The payload as it came, for `chat.send`'s addressing. */
  payload: Record<string, unknown>;
}

export interface BridgeClientOptions {
  url: string;
  token?: string;
  modeOf(channel: string): BridgeMode;
  /** Passthrough: record that the event was seen (an audit entry). */
  observe(chat: BridgeChat): Promise<void>;
  /** Intercept: the agent's answer to the message. */
  answer(chat: BridgeChat): Promise<string>;
  log(level: "info" | "warn", message: string): void;
  initialDelayMs?: number;
  maxDelayMs?: number;
}

export interface BridgeClient {
  readonly connected: boolean;
  close(): void;
}

/** The chat event's fields, or undefined for an event that is not a readable chat message. */
export function readChat(payload: unknown): BridgeChat | undefined {
  if (!payload || typeof payload !== "object") return undefined;
  const p = payload as Record<string, unknown>;
  const channel = [p.channel, p.channelType].find((v) => typeof v === "string" && v !== "") as string | undefined;
  const conversation = [p.sessionKey, p.conversationId, p.chatId].find((v) => typeof v === "string" && v !== "") as string | undefined;
  const message = p.message as unknown;
  const text = [p.text, typeof message === "string" ? message : (message as { text?: unknown } | undefined)?.text].find(
    (v) => typeof v === "string" && v !== "",
  ) as string | undefined;
  if (!channel || !conversation || !text) return undefined;
  // What the gateway sent itself (role assistant, or marked as ours) is not answered again.
  if (p.role === "assistant" || p.fromBridge === true) return undefined;
  return { channel: channel.toLowerCase(), conversation, text, payload: p };
}

export function startBridgeClient(options: BridgeClientOptions): BridgeClient {
  const initial = options.initialDelayMs ?? 1000;
  const max = options.maxDelayMs ?? 30_000;
  let delay = initial;
  let closed = false;
  let connected = false;
  let socket: WebSocket | undefined;
  let timer: NodeJS.Timeout | undefined;

  const send = (frame: unknown) => {
    if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify(frame));
  };

  const onChat = async (chat: BridgeChat) => {
    if (options.modeOf(chat.channel) !== "Intercept") {
      await options.observe(chat);
      return;
    }
    const reply = await options.answer(chat);
    const { channel, sessionKey, conversationId, chatId } = chat.payload;
    send({
      type: "req",
      id: randomUUID(),
      method: "chat.send",
      params: {
        channel,
        ...(sessionKey ? { sessionKey } : {}),
        ...(conversationId ? { conversationId } : {}),
        ...(chatId ? { chatId } : {}),
        message: reply,
      },
    });
  };

  const open = () => {
    if (closed) return;
    const ws = new WebSocket(options.url);
    socket = ws;
    const connectId = randomUUID();
    ws.on("open", () => {
      ws.send(
        JSON.stringify({
          type: "req",
          id: connectId,
          method: "connect",
          params: {
            minProtocol: PROTOCOL_VERSION,
            maxProtocol: PROTOCOL_VERSION,
            role: "operator",
            auth: { token: options.token ?? "" },
          },
        }),
      );
    });
    ws.on("message", (data) => {
      let frame: { type?: unknown; id?: unknown; ok?: unknown; error?: unknown; event?: unknown; payload?: unknown };
      try {
        frame = JSON.parse(String(data));
      } catch {
        return;
      }
      if (frame.type === "res" && frame.id === connectId) {
        if (frame.ok === true) {
          connected = true;
          delay = initial;
          options.log("info", `bridge connected to ${redact(options.url)}`);
        } else {
          options.log("warn", `the bridge gateway refused connect: ${describe(frame.error)}`);
          ws.close();
        }
        return;
      }
      if (frame.type === "event" && frame.event === "chat" && connected) {
        const chat = readChat(frame.payload);
        if (!chat) return;
        onChat(chat).catch((error: Error) => options.log("warn", `a bridged ${chat.channel} message failed: ${error.message}`));
      }
    });
    ws.on("error", (error) => {
      options.log("warn", `bridge connection to ${redact(options.url)} failed: ${error.message}`);
    });
    ws.on("close", () => {
      if (socket === ws) socket = undefined;
      connected = false;
      if (closed) return;
      timer = setTimeout(open, delay);
      timer.unref();
      delay = Math.min(delay * 2, max);
    });
  };

  open();
  return {
    get connected() {
      return connected;
    },
    close() {
      closed = true;
      connected = false;
      if (timer) clearTimeout(timer);
      socket?.close();
      socket = undefined;
    },
  };
}

/** The URL without user info or query (where a token might sit). */
function redact(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "the bridge URL";
  }
}

function describe(error: unknown): string {
  if (typeof error === "string") return error.slice(0, 200);
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === "string" ? message.slice(0, 200) : "no reason given";
}
