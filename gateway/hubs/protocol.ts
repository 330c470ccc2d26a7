// The SignalR JSON hub protocol, version 1: records are JSON texts each ended by the record
// separator 0x1E; the handshake is one such record each way. Only what a server needs: reading
// the client's records and writing its own.
import type { JsonValue } from "@bufbuild/protobuf";

export const RECORD_SEPARATOR = "\u001e";

export const MessageType = {
  Invocation: 1,
  StreamItem: 2,
  Completion: 3,
  StreamInvocation: 4,
  CancelInvocation: 5,
  Ping: 6,
  Close: 7,
} as const;

export const PROTOCOL_NAME = "json";
export const PROTOCOL_VERSION = 1;

/** A record as the client sent it; only the fields the server reads. */
export interface ClientMessage {
  readonly type: number;
  readonly invocationId?: string;
  readonly target?: string;
  readonly arguments?: readonly JsonValue[];
  readonly streamIds?: readonly string[];
}

/** Splits a text frame into its records; a partial last record is kept for the next frame. */
export function splitRecords(buffered: string, text: string): { records: string[]; rest: string } {
  const all = buffered + text;
  const parts = all.split(RECORD_SEPARATOR);
  const rest = parts.pop() ?? "";
  return { records: parts, rest };
}

/** The handshake request, or why it is refused (the text the handshake error answer carries). */
export function readHandshake(record: string): { ok: true } | { ok: false; error: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(record);
  } catch {
    return { ok: false, error: "Handshake request is not valid JSON." };
  }
  if (typeof parsed !== "object" || parsed === null) return { ok: false, error: "Handshake request must be a JSON object." };
  const { protocol, version } = parsed as { protocol?: unknown; version?: unknown };
  if (typeof protocol !== "string") return { ok: false, error: "Handshake request is missing the 'protocol' property." };
  if (protocol !== PROTOCOL_NAME)
    return { ok: false, error: `The protocol '${protocol}' is not supported; this server speaks 'json' only.` };
  if (typeof version !== "number") return { ok: false, error: "Handshake request is missing the 'version' property." };
  if (version !== PROTOCOL_VERSION) {
    return { ok: false, error: `The server does not support version ${version} of the 'json' protocol.` };
  }
  return { ok: true };
}

/** A client record, or a description of what is wrong with it. */
export function readMessage(record: string): ClientMessage | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(record);
  } catch {
    return "a message is not valid JSON";
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return "a message must be a JSON object";
  const message = parsed as Record<string, unknown>;
  if (typeof message.type !== "number") return "a message has no 'type'";
  if (message.invocationId !== undefined && typeof message.invocationId !== "string") return "'invocationId' must be a string";
  if (message.target !== undefined && typeof message.target !== "string") return "'target' must be a string";
  if (message.arguments !== undefined && !Array.isArray(message.arguments)) return "'arguments' must be an array";
  if (message.streamIds !== undefined && !Array.isArray(message.streamIds)) return "'streamIds' must be an array";
  return message as unknown as ClientMessage;
}

export const HANDSHAKE_OK = `{}${RECORD_SEPARATOR}`;
export const PING = `{"type":6}${RECORD_SEPARATOR}`;

export function handshakeError(error: string): string {
  return JSON.stringify({ error }) + RECORD_SEPARATOR;
}

/**
 * How the StreamItems of one invocation are written around items already written as JSON text:
 * everything but the item is the same for each, so it is made once per invocation.
 */
export function streamItemWriter(invocationId: string): (itemJson: string) => string {
  const head = `{"type":2,"invocationId":${JSON.stringify(invocationId)},"item":`;
  const tail = `}${RECORD_SEPARATOR}`;
  return (itemJson) => head + itemJson + tail;
}

export function streamItem(invocationId: string, item: JsonValue): string {
  return JSON.stringify({ type: MessageType.StreamItem, invocationId, item }) + RECORD_SEPARATOR;
}

/** A Completion: with a result (unary), with an error, or bare (a stream's end). */
export function completion(invocationId: string, outcome: { result: JsonValue } | { error: string } | undefined): string {
  return JSON.stringify({ type: MessageType.Completion, invocationId, ...outcome }) + RECORD_SEPARATOR;
}

/** A call of a client method; no invocation id: the server expects no answer. */
export function invocation(target: string, args: readonly JsonValue[]): string {
  return JSON.stringify({ type: MessageType.Invocation, target, arguments: args }) + RECORD_SEPARATOR;
}

export function close(error: string | undefined, allowReconnect = false): string {
  const message: { type: number; error?: string; allowReconnect?: boolean } = { type: MessageType.Close };
  if (error !== undefined) message.error = error;
  if (allowReconnect) message.allowReconnect = true;
  return JSON.stringify(message) + RECORD_SEPARATOR;
}
