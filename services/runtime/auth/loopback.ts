// Whether a listen address only accepts connections from this machine. An open API (no key
// configured) may only listen there unless Auth:AllowAnonymousPublicBind says otherwise.
import { BlockList, isIP } from "node:net";

const loopback = new BlockList();
loopback.addSubnet("127.0.0.0", 8, "ipv4");
loopback.addAddress("::1", "ipv6");

/**
 * True for 127.0.0.0/8, ::1 (also written [::1] or in full), IPv4-mapped 127.x addresses and the
 * name `localhost`. Any other name counts as public: what it resolves to is not ours to guess.
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host
    .trim()
    .replace(/^\[(.*)\]$/, "$1")
    .toLowerCase();
  if (bare === "localhost") return true;
  const family = isIP(bare);
  // BlockList matches IPv4-mapped IPv6 addresses (::ffff:127.0.0.1) against the IPv4 subnet.
  if (family === 4) return loopback.check(bare, "ipv4");
  if (family === 6) return loopback.check(bare, "ipv6");
  return false;
}
