// Which headers a service sets on its answer reach the REST client. An allow-list: protocol
// headers (grpc-*, connect-*, framing, trailers) describe the hop to the service, not the answer.
import type { HttpError } from "../errors/http-error.js";

// Headers that describe the resource or how to treat it, which only the service can know.
// WWW-Authenticate tells a client refused with 401 which credential to send (RFC 9110 11.6.1).
const NAMED = new Set(["content-disposition", "cache-control", "retry-after", "location", "www-authenticate"]);

// x- headers that belong to the gateway (x-request-id is its own) or to a protocol hop.
const RESERVED_X = new Set(["x-request-id", "x-grpc-web", "x-user-agent"]);

/**
 * The name of the caller's credential (an API key's Name), as the service reports it on its
 * answer for a front's request log; read by the gateway, never passed to the REST client.
 */
export const CALLER_HEADER = "x-meshwork-caller";

/** Whether a header the service set on its response is passed on to the REST client. */
export function forwardsResponseHeader(name: string): boolean {
  const lower = name.toLowerCase();
  if (NAMED.has(lower)) return true;
  // x-meshwork-* are the mesh's own, between the gateway and the service.
  return lower.startsWith("x-") && !RESERVED_X.has(lower) && !lower.startsWith("x-meshwork-");
}

/** The forwardable subset of a service's response headers; undefined when there is none. */
export function clientResponseHeaders(header: Headers | undefined): Record<string, string> | undefined {
  let out: Record<string, string> | undefined;
  header?.forEach((value, name) => {
    if (forwardsResponseHeader(name)) (out ??= {})[name] = value;
  });
  return out;
}

/** An error answer with the service's forwardable headers; the gateway's own (Allow, ...) win. */
export function withServiceHeaders(error: HttpError, header: Headers | undefined): Readonly<Record<string, string>> | undefined {
  const fromService = clientResponseHeaders(header);
  if (!fromService) return error.headers;
  return { ...fromService, ...error.headers };
}
