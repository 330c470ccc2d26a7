// Tor's bulk exit list (https://check.torproject.org/torbulkexitlist): one address per line, `#`
// comments. Parsed into canonical addresses, distinct and sorted, so that a refresh that changes
// nothing stores the same list.
import { isIPv4, isIPv6 } from "node:net";

/**
 * The exit addresses of a bulk list body: blank lines, comments (a line from `#`, or the rest of
 * a line after one) and lines that are not one IPv4 or IPv6 address are skipped. IPv4 in dotted
 * decimal (no leading zeros), IPv6 lower-cased and compressed as RFC 5952 says; IPv4 addresses
 * first, each family in numeric order, no repeats.
 */
export function parseTorExitList(body: string): string[] {
  const v4 = new Map<string, number>();
  const v6 = new Map<string, bigint>();
  for (const rawLine of body.split(/\r?\n/)) {
    const hash = rawLine.indexOf("#");
    const line = (hash === -1 ? rawLine : rawLine.slice(0, hash)).trim();
    if (line === "") continue;
    if (isIPv4(line)) {
      if (!v4.has(line))
        v4.set(
          line,
          line.split(".").reduce((n, part) => n * 256 + Number(part), 0),
        );
    } else if (isIPv6(line)) {
      const canonical = canonicalIpv6(line);
      if (canonical && !v6.has(canonical.text)) v6.set(canonical.text, canonical.value);
    }
  }
  return [
    ...[...v4].sort((a, b) => a[1] - b[1]).map(([text]) => text),
    ...[...v6].sort((a, b) => (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)).map(([text]) => text),
  ];
}

/** RFC 5952 §4 text of an IPv6 address (the WHATWG URL serializer writes exactly that); undefined for a zone id. */
function canonicalIpv6(address: string): { text: string; value: bigint } | undefined {
  if (address.includes("%")) return undefined;
  let text: string;
  try {
    text = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
  const [head = "", tail] = text.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  const value = groups.reduce((n, group) => (n << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
  return { text, value };
}
