// The client's address as a front sees it: the TCP peer, or, when the front honours forwarded
// headers and the peer is one of its trusted proxies (CIDRs), the address X-Forwarded-For names
// (the right-most one that is not itself a trusted proxy). A client that is not behind a trusted
// proxy cannot claim another address.
import { BlockList, isIP } from "node:net";
import type { IncomingMessage } from "node:http";

export interface ForwardedPolicy {
  /** Honour X-Forwarded-For at all. */
  readonly forwardedHeaders: boolean;
  /** Proxies (CIDRs or single addresses) whose X-Forwarded-For is believed. */
  readonly trustedProxies: readonly string[];
}

/** IPv4-mapped IPv6 (::ffff:1.2.3.4) is the IPv4 address it carries. */
export function normalizeIp(address: string | undefined): string {
  if (!address) return "unknown";
  const trimmed = address.trim();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(trimmed);
  return mapped ? mapped[1]! : trimmed.toLowerCase();
}

/** Checks the CIDRs once; throws naming the bad one. */
export function trustedProxyList(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const raw of cidrs) {
    const entry = raw.trim();
    if (entry === "") continue;
    const [address, bits] = entry.split("/");
    const family = isIP(address ?? "");
    if (family === 0) throw new Error(`"${entry}" is not an IP address or CIDR`);
    const type = family === 4 ? "ipv4" : "ipv6";
    if (bits === undefined) {
      list.addAddress(address!, type);
      continue;
    }
    const prefix = Number(bits);
    if (!/^\d+$/.test(bits) || prefix > (family === 4 ? 32 : 128)) throw new Error(`"${entry}" has a bad prefix length`);
    list.addSubnet(address!, prefix, type);
  }
  return list;
}

function isTrusted(list: BlockList, address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return list.check(address, family === 4 ? "ipv4" : "ipv6");
}

/** A resolver for one front; undefined policy or forwardedHeaders off: the TCP peer. */
export function clientIpResolver(policy: ForwardedPolicy | undefined): (req: IncomingMessage) => string {
  if (!policy?.forwardedHeaders || policy.trustedProxies.length === 0) return (req) => normalizeIp(req.socket.remoteAddress);
  const trusted = trustedProxyList(policy.trustedProxies);
  return (req) => {
    let address = normalizeIp(req.socket.remoteAddress);
    if (!isTrusted(trusted, address)) return address;
    const header = req.headers["x-forwarded-for"];
    const hops = (Array.isArray(header) ? header.join(",") : (header ?? ""))
      .split(",")
      .map((h) => normalizeIp(h))
      .filter((h) => h !== "unknown");
    // Walk back from the proxy: each trusted hop vouches for the one before it.
    while (hops.length > 0 && isTrusted(trusted, address)) {
      const previous = hops.pop()!;
      if (isIP(previous) === 0) break;
      address = previous;
    }
    return address;
  };
}
