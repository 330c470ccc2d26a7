// Which request headers travel from the HTTP client to the service.
import type { IncomingMessage } from "node:http";

/** Adds or changes headers sent to the service; called once per request. */
export type HeaderForwarder = (req: IncomingMessage, outgoing: Record<string, string>) => void;

// Trace context, credentials the service's auth policy checks, and Last-Event-ID, with which a
// reconnecting event-stream client asks for what it missed. Nothing else by default.
const FORWARDED = ["traceparent", "tracestate", "authorization", "x-api-key", "last-event-id"] as const;

// The client's TCP address, for per-client limits: never taken from a header the client sent.
const CLIENT_ADDRESS_HEADER = "x-meshwork-client-address";

/** What a method's options say about the request headers of its calls. */
export interface MethodHeaderPolicy {
  /** The method's (meshwork.api.v1.client_address) is DROP: the service never learns the client's address. */
  readonly dropClientAddress: boolean;
  /** The method's (meshwork.api.v1.forward_headers): passed as the client sent them. */
  readonly forwardHeaders?: readonly string[];
}

/** Names a method may not ask to forward: the client's address claims and the mesh's own headers. */
export function forwardableHeader(name: string): boolean {
  return (
    /^[a-z0-9!#$%&'*+.^_`|~-]+$/.test(name) &&
    !["x-forwarded-for", "x-real-ip", "forwarded", "host", "content-length", "content-type", "connection"].includes(name) &&
    !name.startsWith("x-meshwork-")
  );
}

export function serviceHeaders(
  req: IncomingMessage,
  requestId: string,
  extra: HeaderForwarder | undefined,
  policy?: MethodHeaderPolicy,
): Record<string, string> {
  const out: Record<string, string> = { "x-request-id": requestId };
  if (!policy?.dropClientAddress) out[CLIENT_ADDRESS_HEADER] = clientAddress(req.socket.remoteAddress);
  for (const name of FORWARDED) {
    const value = req.headers[name];
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  for (const name of policy?.forwardHeaders ?? []) {
    const value = req.headers[name];
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  extra?.(req, out);
  // A front's own forwarder cannot bring it back either.
  if (policy?.dropClientAddress) delete out[CLIENT_ADDRESS_HEADER];
  return out;
}

/** IPv4-mapped IPv6 (::ffff:1.2.3.4) is written as the IPv4 address it carries. */
function clientAddress(address: string | undefined): string {
  if (!address) return "unknown";
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1]! : address.toLowerCase();
}
