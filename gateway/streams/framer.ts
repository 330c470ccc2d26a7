// How a server-streaming response is cut into HTTP body chunks. NDJSON is the default framer;
// SSE and others plug in here without touching the pump.
import type { JsonValue } from "@bufbuild/protobuf";

export interface StreamFramer {
  /** Media type that selects this framer when the client's Accept header lists it. */
  readonly mediaType: string;
  /** Content-Type of the response. */
  readonly contentType: string;
  /**
   * Send the status line before the first message. Lazy framers (NDJSON) wait for the first
   * message so that an immediate failure still gets its proper HTTP status.
   */
  readonly eagerHeaders: boolean;
  /** One message, already in REST JSON form. */
  message(json: JsonValue): string;
  /** A failure after the status line was sent; `document` is the styled error body. */
  error(status: number, document: object): string;
}

/** The framer whose media type the client accepts, else the first (the default). */
export function selectFramer(accept: string | undefined, framers: readonly [StreamFramer, ...StreamFramer[]]): StreamFramer {
  if (accept) {
    for (const f of framers) if (accept.includes(f.mediaType)) return f;
  }
  return framers[0];
}
