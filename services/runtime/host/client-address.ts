// The address of the client a call is made for, as call metadata: a REST front writes the TCP
// peer of the HTTP request; the service host overwrites it with the TCP peer of every call it
// receives, unless that peer is a trusted gateway. X-Forwarded-For and the like are never read.
export const CLIENT_ADDRESS_HEADER = "x-meshwork-client-address";

/** IPv4-mapped IPv6 (::ffff:1.2.3.4) is the IPv4 address it carries. */
export function normalizeAddress(address: string | undefined): string {
  if (!address) return "unknown";
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1]! : address.toLowerCase();
}

/**
 * The client address of a call the host received from `peer`: what a trusted gateway said, or
 * the peer itself for anyone else (what an outside caller wrote is dropped).
 */
export function clientAddressFor(peer: string | undefined, claimed: string | string[] | undefined, trusted: ReadonlySet<string>): string {
  const from = normalizeAddress(peer);
  if (trusted.has(from) && typeof claimed === "string" && claimed !== "") return claimed;
  return from;
}

/** The client address of the call being handled (a header of its metadata). */
export function clientAddressOf(header: Headers): string {
  return header.get(CLIENT_ADDRESS_HEADER) ?? "unknown";
}
