// The Signal adapter, over signal-cli's HTTP daemon (`signal-cli daemon --http`): connect =
// GET /api/v1/check (the handshake), then one Server-Sent Events stream GET /api/v1/events on this
// instance. Each `receive` event whose envelope has a dataMessage with text, from someone other than
// Channels:Signal:Account, goes to host.receive; the conversation is the group id in a group, else
// the sender's number (or uuid). Replies are JSON-RPC `send` on POST /api/v1/rpc, to `groupId` when
// the conversation is a group id, else to `recipient: [id]` (a number starting with + or a uuid).
// A stream that ends or fails is a platform-side loss: connectionChanged(false), then every 5 s a
// new stream with Last-Event-ID (the last event id seen) until one is answered 200
// (connectionChanged(true)). The SSE framing is parsed here (fetch streaming, a small parser).
// While the gateway drains for an update, host.receive refuses a message: the stream is closed
// right there without taking that event's id as the Last-Event-ID, and once the drain ends a new
// stream asks from the last event taken (not a loss). Whether the refused event comes again is the
// daemon's to decide: one that replays from Last-Event-ID delivers it; one that does not, loses it.
// A connect request on an instance not holding the lease only calls /api/v1/check.
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { type ChannelAdapter, type ChannelFactory, ChannelPlatformError } from "./channel-adapter.js";
import { platformHttp } from "./platform-http.js";
import { adapterLoop } from "./adapter-loop.js";

export const SIGNAL_RECONNECT_MS = 5000;

export interface SignalSettings {
  /** Channels:Signal:AutoConnect: the state at the first start with it configured. */
  autoConnect?: boolean;
  baseUrl?: string;
  account?: string;
}

interface SignalEnvelope {
  source?: string;
  sourceNumber?: string;
  sourceUuid?: string;
  dataMessage?: { message?: unknown; groupInfo?: { groupId?: unknown } };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A direct conversation (a number or a uuid) rather than a group id. */
export function isSignalRecipient(conversationId: string): boolean {
  return conversationId.startsWith("+") || UUID.test(conversationId);
}

export const createSignalChannel: ChannelFactory<SignalSettings> = (settings, host): ChannelAdapter => {
  const base = (settings.baseUrl ?? "").replace(/\/+$/, "");
  const account = settings.account ?? "";
  const http = platformHttp({
    secrets: () => [],
    onRateLimited: (label, seconds) => host.logger.warn({ call: label, retryAfterSeconds: seconds }, "signal-cli asked to slow down (429)"),
  });

  async function check(signal?: AbortSignal): Promise<void> {
    const answer = await http({ label: "signal check", url: `${base}/api/v1/check`, signal });
    if (answer.status !== 200) throw new ChannelPlatformError(`signal check: HTTP ${answer.status}`, "refused");
  }

  /** Hands one event's message on; answers false when it was refused (draining). */
  function handle(event: string, data: string): boolean {
    if (event !== "receive") return true;
    let parsed: { envelope?: SignalEnvelope; params?: { envelope?: SignalEnvelope } };
    try {
      parsed = JSON.parse(data);
    } catch {
      return true;
    }
    const envelope = parsed.envelope ?? parsed.params?.envelope;
    const text = envelope?.dataMessage?.message;
    if (!envelope || typeof text !== "string" || text === "") return true;
    const sender = envelope.sourceNumber ?? envelope.source ?? envelope.sourceUuid;
    if (!sender || sender === account) return true;
    const groupId = envelope.dataMessage?.groupInfo?.groupId;
    return host.receive({
      channelType: "signal",
      conversationId: typeof groupId === "string" && groupId !== "" ? groupId : sender,
      senderId: sender,
      text,
    });
  }

  /**
   * Reads one event stream to its end; answers once the stream closes ("ended"), or once an event
   * was refused ("held": the stream is given up there). Throws when it is not answered 200.
   */
  async function stream(stop: AbortSignal, lastEventId: { value?: string }, opened: () => void): Promise<"ended" | "held"> {
    let res: Response;
    try {
      res = await fetch(`${base}/api/v1/events`, {
        headers: { accept: "text/event-stream", ...(lastEventId.value !== undefined ? { "last-event-id": lastEventId.value } : {}) },
        signal: stop,
      });
    } catch (error) {
      if (stop.aborted) return "ended";
      throw new ChannelPlatformError(`signal events: ${error instanceof Error ? error.message : String(error)}`, "unreachable");
    }
    if (res.status !== 200 || !res.body) {
      await res.body?.cancel().catch(() => {});
      throw new ChannelPlatformError(`signal events: HTTP ${res.status}`, "refused");
    }
    opened();
    const decoder = new TextDecoder();
    let buffer = "";
    let event = "";
    let data: string[] = [];
    /** The id of the event being read: the Last-Event-ID once that event was taken. */
    let id = lastEventId.value;
    let held = false;
    /** Dispatches the event read so far: false when its message was refused. */
    const dispatch = (): boolean => {
      const taken = data.length === 0 || handle(event || "message", data.join("\n"));
      event = "";
      data = [];
      if (taken) lastEventId.value = id;
      return taken;
    };
    try {
      reading: for await (const chunk of res.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        for (let end = buffer.search(/\r\n|\r|\n/); end >= 0; end = buffer.search(/\r\n|\r|\n/)) {
          // A lone \r at the end of the buffer may be the first half of \r\n: wait for more.
          if (buffer[end] === "\r" && end === buffer.length - 1) break;
          const line = buffer.slice(0, end);
          buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
          if (line === "") {
            // Leaving the loop cancels the stream: nothing after the refused event is read.
            if (!dispatch()) {
              held = true;
              break reading;
            }
            continue;
          }
          if (line.startsWith(":")) continue;
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          let value = colon < 0 ? "" : line.slice(colon + 1);
          if (value.startsWith(" ")) value = value.slice(1);
          if (field === "event") event = value;
          else if (field === "data") data.push(value);
          else if (field === "id" && !value.includes("\u0000")) id = value;
        }
      }
      return held ? "held" : "ended";
    } catch (error) {
      if (stop.aborted) return "ended";
      throw new ChannelPlatformError(`signal events: ${error instanceof Error ? error.message : String(error)}`, "unreachable");
    }
  }

  async function listen(stop: AbortSignal): Promise<void> {
    const lastEventId: { value?: string } = {};
    let up = true;
    while (!stop.aborted) {
      let reason = "the event stream ended";
      try {
        const outcome = await stream(stop, lastEventId, () => {
          if (!up) {
            up = true;
            host.connectionChanged(true);
          }
        });
        if (outcome === "held") {
          // Not a loss: the stream was given up at a refused message; a new one once messages are taken.
          await host.accepting(stop);
          continue;
        }
      } catch (error) {
        reason = error instanceof Error ? error.message : String(error);
      }
      if (stop.aborted) return;
      if (up) {
        up = false;
        host.logger.warn({ channelType: "signal", err: reason }, "the signal-cli event stream was lost; reconnecting every 5 s");
        host.connectionChanged(false, reason);
      }
      await sleep(SIGNAL_RECONNECT_MS, undefined, { signal: stop }).catch(() => {});
    }
  }

  return {
    type: "signal",
    displayName: "Signal",
    connectedAtStart: settings.autoConnect ?? false,
    missingSetting: () => (base === "" ? "Channels:Signal:BaseUrl" : account === "" ? "Channels:Signal:Account" : undefined),

    ...adapterLoop(check, listen),
    check: () => check(),

    async send(conversationId, content) {
      const target = isSignalRecipient(conversationId) ? { recipient: [conversationId] } : { groupId: conversationId };
      const id = randomUUID();
      const answer = await http({
        label: "signal send",
        url: `${base}/api/v1/rpc`,
        body: { jsonrpc: "2.0", method: "send", params: { account, ...target, message: content }, id },
      });
      const body = answer.body as { result?: { timestamp?: unknown }; error?: { code?: number; message?: string } } | undefined;
      if (answer.status !== 200 || !body || body.error || !body.result) {
        const why = body?.error ? `error ${body.error.code ?? "?"}: ${body.error.message ?? ""}` : `HTTP ${answer.status}`;
        throw new ChannelPlatformError(`signal send: ${why}`, "refused");
      }
      return String(body.result.timestamp ?? id);
    },
  };
};
