// Server-side request forgery guard for webhook destinations: the host is resolved once, every
// address it resolves to is classified, and the request then connects to exactly those checked
// addresses (see pinnedLookup), so a second, different DNS answer cannot slip past.
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP } from "node:net";

export type AddressClass = "public" | "loopback" | "private" | "link-local" | "cgnat" | "unspecified" | "multicast" | "reserved";

export interface DestinationPolicy {
  allowLoopback: boolean;
  allowPrivateNetworks: boolean;
  /** Where the two settings live, for refusal messages (default `Webhooks`). */
  settingsSection?: string;
}

function describe(kind: Exclude<AddressClass, "public">, section = "Webhooks"): string {
  switch (kind) {
    case "loopback":
      return `a loopback address (refused unless ${section}:AllowLoopback is true)`;
    case "private":
      return `a private-network address (refused unless ${section}:AllowPrivateNetworks is true)`;
    case "link-local":
      return `a link-local address (refused unless ${section}:AllowPrivateNetworks is true)`;
    case "cgnat":
      return `a carrier-grade NAT address (refused unless ${section}:AllowPrivateNetworks is true)`;
    case "unspecified":
      return "the unspecified address (never allowed)";
    case "multicast":
      return "a multicast address (never allowed)";
    case "reserved":
      return "a reserved address (never allowed)";
  }
}

/** A destination the policy refuses: a permanent failure, never retried. */
export class RefusedDestination extends Error {
  override name = "RefusedDestination";
}

export function isAllowed(kind: AddressClass, policy: DestinationPolicy): boolean {
  switch (kind) {
    case "public":
      return true;
    case "loopback":
      return policy.allowLoopback;
    case "private":
    case "link-local":
    case "cgnat":
      return policy.allowPrivateNetworks;
    default:
      // Nothing legitimate listens there; 0.0.0.0 even reaches this host on Linux.
      return false;
  }
}

/** The class of an IPv4 or IPv6 literal; IPv4 embedded in IPv6 (mapped, compatible, NAT64, 6to4) counts as that IPv4. */
export function classifyAddress(address: string): AddressClass {
  const bare = address.replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, "");
  const family = isIP(bare);
  if (family === 4) return classifyV4(v4Octets(bare));
  if (family === 6) return classifyV6(v6Words(bare));
  throw new Error(`not an IP address: ${address}`);
}

function v4Octets(address: string): number[] {
  return address.split(".").map(Number);
}

function classifyV4([a, b, c]: number[]): AddressClass {
  const [o1, o2, o3] = [a!, b!, c!];
  if (o1 === 0) return "unspecified"; // 0.0.0.0/8, "this network"
  if (o1 === 127) return "loopback";
  if (o1 === 10) return "private";
  if (o1 === 172 && o2 >= 16 && o2 <= 31) return "private";
  if (o1 === 192 && o2 === 168) return "private";
  if (o1 === 169 && o2 === 254) return "link-local";
  if (o1 === 100 && o2 >= 64 && o2 <= 127) return "cgnat";
  if (o1 === 192 && o2 === 0 && o3 === 0) return "private"; // IETF protocol assignments
  if (o1 === 198 && (o2 === 18 || o2 === 19)) return "private"; // benchmarking, often internal
  if (o1 >= 224 && o1 <= 239) return "multicast";
  if (o1 >= 240) return "reserved"; // 240/4 and the broadcast address
  return "public";
}

/** Eight 16-bit words of an IPv6 literal (isIP has already accepted it). */
function v6Words(address: string): number[] {
  let text = address.toLowerCase();
  const tail: number[] = [];
  const dotted = text.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted) {
    const [a, b, c, d] = v4Octets(dotted[2]!);
    tail.push((a! << 8) | b!, (c! << 8) | d!);
    text = dotted[1]!.endsWith("::") ? dotted[1]! : dotted[1]!.slice(0, -1);
  }
  const [head, rest] = text.split("::") as [string, string | undefined];
  const words = (part: string | undefined) =>
    part
      ? part
          .split(":")
          .filter((w) => w !== "")
          .map((w) => parseInt(w, 16))
      : [];
  const left = words(head);
  const right = [...words(rest), ...tail];
  const fill = rest === undefined ? [] : new Array<number>(8 - left.length - right.length).fill(0);
  return [...left, ...fill, ...right];
}

function classifyV6(w: number[]): AddressClass {
  const zeroUpTo = (n: number) => w.slice(0, n).every((x) => x === 0);
  const embedded = (hi: number, lo: number) => classifyV4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  if (zeroUpTo(8)) return "unspecified";
  if (zeroUpTo(7) && w[7] === 1) return "loopback";
  if (zeroUpTo(5) && w[5] === 0xffff) return embedded(w[6]!, w[7]!); // ::ffff:a.b.c.d, IPv4-mapped
  if (zeroUpTo(6)) return embedded(w[6]!, w[7]!); // ::a.b.c.d, IPv4-compatible (deprecated)
  if (w[0] === 0x64 && w[1] === 0xff9b && w.slice(2, 6).every((x) => x === 0)) return embedded(w[6]!, w[7]!); // NAT64
  if (w[0] === 0x2002) return embedded(w[1]!, w[2]!); // 6to4
  const first = w[0]!;
  if ((first & 0xfe00) === 0xfc00) return "private"; // fc00::/7 unique local
  if ((first & 0xffc0) === 0xfe80) return "link-local"; // fe80::/10
  if ((first & 0xffc0) === 0xfec0) return "private"; // fec0::/10 site-local (deprecated)
  if ((first & 0xff00) === 0xff00) return "multicast"; // ff00::/8
  if (first === 0x100 && zeroUpTo(4)) return "reserved"; // 100::/64 discard-only
  if (first === 0x2001 && w[1] === 0xdb8) return "reserved"; // documentation
  if ((first & 0xe000) !== 0x2000) return "reserved"; // outside 2000::/3, the global unicast space
  return "public";
}

export interface CheckedDestination {
  /** Every address the host resolved to, all allowed; the request may connect to any of them. */
  addresses: LookupAddress[];
}

export type Resolver = (host: string) => Promise<LookupAddress[]>;

const systemResolver: Resolver = (host) =>
  new Promise((resolve, reject) => {
    dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)));
  });

/**
 * Resolves the URL's host and checks every address. Refuses (RefusedDestination) when any one of
 * them is not allowed: a name that answers both a public and an internal address is not trusted.
 */
export async function checkDestination(
  url: URL,
  policy: DestinationPolicy,
  resolve: Resolver = systemResolver,
): Promise<CheckedDestination> {
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const literal = isIP(host);
  const addresses: LookupAddress[] = literal ? [{ address: host, family: literal }] : await resolve(host);
  if (addresses.length === 0) throw new Error(`${host} resolved to no address`);
  for (const { address } of addresses) {
    const kind = classifyAddress(address);
    if (!isAllowed(kind, policy)) {
      const shown = literal ? address : `${host} resolves to ${address}, which`;
      throw new RefusedDestination(
        `destination refused: ${shown} is ${describe(kind as Exclude<AddressClass, "public">, policy.settingsSection)}`,
      );
    }
  }
  return { addresses };
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for http.request that answers only the addresses already checked. */
export function pinnedLookup(checked: CheckedDestination) {
  return (_hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    if (options.all) callback(null, checked.addresses);
    else callback(null, checked.addresses[0]!.address, checked.addresses[0]!.family);
  };
}
