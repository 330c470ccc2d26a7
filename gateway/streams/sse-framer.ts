// Server-sent events: each meshwork.api.v1.ServerSentEvent a service streams (alone, or several in
// a ServerSentEventBatch) becomes one text/event-stream frame, its `data` (a google.protobuf.Any)
// rendered as the service's REST answers render that message. Many clients receive the same
// event, so a rendered frame is kept for a while and reused when the same event (same id, same
// bytes) comes by again.
import type { DescMessage, JsonObject, Message, Registry } from "@bufbuild/protobuf";
import { anyUnpack, type Any } from "@bufbuild/protobuf/wkt";
import type { ServerSentEvent, ServerSentEventBatch } from "../../gen/meshwork/api/v1/sse_pb.js";
import type { ServiceStyle } from "../style.js";
import { messageJsonWriter } from "../transcoder/response-mapping.js";

/** Any server-streaming method answering one of these types is framed as text/event-stream. */
export const SERVER_SENT_EVENT_TYPE = "meshwork.api.v1.ServerSentEvent";
export const SERVER_SENT_EVENT_BATCH_TYPE = "meshwork.api.v1.ServerSentEventBatch";

export function isEventStreamType(typeName: string): boolean {
  return typeName === SERVER_SENT_EVENT_TYPE || typeName === SERVER_SENT_EVENT_BATCH_TYPE;
}

export const SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8";

/** Proxies (nginx) buffer responses unless told otherwise; a buffered event stream is a dead one. */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  "content-type": SSE_CONTENT_TYPE,
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
};

export const KEEP_ALIVE_FRAME = ": keep-alive\n\n";

// Enough for every client of a burst of events to find its frame, small enough to never matter.
const DEFAULT_CACHE_SIZE = 512;

interface CachedFrame {
  readonly comment: string;
  readonly retryMs: number;
  readonly typeUrl: string;
  readonly value: Uint8Array;
  readonly bytes: Buffer;
}

export interface SseFramer {
  /**
   * A ServerSentEvent's frame, or a batch's frames, each ending with its blank line (a frozen
   * batch's as one buffer). Bytes, so a frame shared by many clients is encoded once, not once per
   * client.
   */
  frames(message: Message): readonly Buffer[];
  /** A failure after the stream opened: its last frame. */
  error(document: object): string;
}

export function createSseFramer(style: ServiceStyle, registry: Registry, cacheSize = DEFAULT_CACHE_SIZE): SseFramer {
  const writers = new Map<DescMessage, (message: Message) => JsonObject>();
  // Insertion-ordered: the oldest entry goes first when full. Keyed by event and id, checked by
  // content, so a different event that happens to share an id is never answered from the cache.
  const cache = new Map<string, CachedFrame>();

  const dataJson = (any: Any): string => {
    const message = anyUnpack(any, registry);
    if (!message) {
      throw new Error(`server-sent event data of type ${any.typeUrl} is unknown to this front`);
    }
    const desc = registry.getMessage(message.$typeName)!;
    let write = writers.get(desc);
    if (!write) writers.set(desc, (write = messageJsonWriter(desc, style, registry)));
    return JSON.stringify(write(message));
  };

  const frameOf = (event: ServerSentEvent): Buffer => {
    const data = event.data;
    if (event.id === "" || data === undefined) return Buffer.from(frameText(event, data && dataJson(data)));
    const key = `${event.event}\n${event.id}`;
    const hit = cache.get(key);
    if (
      hit !== undefined &&
      hit.comment === event.comment &&
      hit.retryMs === event.retryMs &&
      hit.typeUrl === data.typeUrl &&
      Buffer.compare(hit.value, data.value) === 0
    ) {
      return hit.bytes;
    }
    const bytes = Buffer.from(frameText(event, dataJson(data)));
    if (cache.size >= cacheSize) cache.delete(cache.keys().next().value!);
    cache.set(key, { comment: event.comment, retryMs: event.retryMs, typeUrl: data.typeUrl, value: data.value, bytes });
    return bytes;
  };

  // A frozen batch is one instance for every client of a hand-out: its frames become one buffer,
  // encoded once, written once per client.
  const frozenBatches = new WeakMap<Message, readonly Buffer[]>();

  return {
    frames(message) {
      if (message.$typeName === SERVER_SENT_EVENT_TYPE) return [frameOf(message as ServerSentEvent)];
      const known = frozenBatches.get(message);
      if (known !== undefined) return known;
      const frames = (message as ServerSentEventBatch).events.map(frameOf);
      if (!Object.isFrozen(message)) return frames;
      const joined = frames.length > 1 ? [Buffer.concat(frames)] : frames;
      frozenBatches.set(message, joined);
      return joined;
    },
    error(document) {
      return `event: error\ndata: ${JSON.stringify(document)}\n\n`;
    },
  };
}

const LINE_BREAK = /\r\n|\r|\n/;
// A field value cannot hold a line break, and an id holding NUL is ignored by clients.
const NOT_IN_FIELD = /[\r\n\0]/g;

function frameText(event: ServerSentEvent, data: string | undefined): string {
  let out = "";
  if (event.comment !== "") {
    for (const line of event.comment.split(LINE_BREAK)) out += `: ${line}\n`;
  }
  if (event.event !== "") out += `event: ${event.event.replace(NOT_IN_FIELD, "")}\n`;
  if (event.id !== "") out += `id: ${event.id.replace(NOT_IN_FIELD, "")}\n`;
  if (event.retryMs !== 0) out += `retry: ${event.retryMs}\n`;
  // JSON.stringify escapes CR and LF, so the data is always one line.
  if (data !== undefined) out += `data: ${data}\n`;
  return `${out}\n`;
}
