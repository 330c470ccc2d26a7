// Getters and setters that let the propagator read and write the header containers Meshwork
// meets: fetch Headers (Connect), NATS headers, and plain records (node:http, hand-made maps).
import type { TextMapGetter, TextMapSetter } from "@opentelemetry/api";

/** Anything with get(name) (fetch Headers, NATS MsgHdrs) or a plain record of header values. */
export type HeaderSource =
  | { get(name: string): string | string[] | null | undefined; keys?(): Iterable<string> }
  | Readonly<Record<string, string | string[] | undefined>>;

/** A plain record, or anything with set(name, value) (fetch Headers, NATS MsgHdrs). */
export type HeaderSink = Record<string, string> | { set(name: string, value: string): void };

function hasGet(source: HeaderSource): source is Extract<HeaderSource, { get: unknown }> {
  return typeof (source as { get?: unknown }).get === "function";
}

export const headerGetter: TextMapGetter<HeaderSource> = {
  keys(source) {
    if (hasGet(source)) {
      return source.keys ? [...source.keys()] : [];
    }
    return Object.keys(source);
  },
  get(source, key) {
    const value = hasGet(source) ? source.get(key) : (source[key] ?? source[key.toLowerCase()]);
    // NATS answers "" for a missing header.
    return value === null || value === "" ? undefined : value;
  },
};

export const headerSetter: TextMapSetter<HeaderSink> = {
  set(sink, key, value) {
    if (typeof (sink as { set?: unknown }).set === "function") {
      (sink as { set(name: string, value: string): void }).set(key, value);
    } else {
      (sink as Record<string, string>)[key] = value;
    }
  },
};
