// The SSRF guard of web_fetch and image URLs: http(s) only; every address the host name resolves to
// is checked (loopback needs Tools:Web:AllowLoopback; private, link-local and CGNAT need
// Tools:Web:AllowPrivateNetworks; multicast, broadcast and reserved ranges never pass), and the
// connection goes to a checked address: the request's `lookup` answers only that address, so a
// second DNS answer (rebinding) cannot redirect it. Each redirect (at most 5) is checked again.
// Refusals are PolicyBlock (`Blocked by policy: …`).
import { lookup as dnsLookup } from "node:dns/promises";
import { type IncomingMessage, request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { PolicyBlock, ToolError } from "../tool.js";

export const MAX_REDIRECTS = 5;

export interface SsrfSettings {
  allowLoopback: boolean;
  allowPrivateNetworks: boolean;
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address (a test seam; DNS by default). */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: HostResolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

type Kind = "loopback" | "private" | "never";

function blockList(v4: string[], v6: string[]): BlockList {
  const list = new BlockList();
  for (const cidr of v4) {
    const [net, prefix] = cidr.split("/");
    list.addSubnet(net!, Number(prefix), "ipv4");
  }
  for (const cidr of v6) {
    const [net, prefix] = cidr.split("/");
    list.addSubnet(net!, Number(prefix), "ipv6");
  }
  return list;
}

const ranges: Record<Kind, BlockList> = {
  loopback: blockList(["127.0.0.0/8", "0.0.0.0/8"], ["::1/128", "::/128"]),
  // Private (RFC 1918, unique local), link-local and CGNAT (100.64.0.0/10).
  private: blockList(["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10"], ["fc00::/7", "fe80::/10"]),
  // Multicast, reserved, broadcast, benchmarking-free: never a web server to fetch from.
  never: blockList(["224.0.0.0/4", "240.0.0.0/4"], ["ff00::/8"]),
};

/** An IPv6 address that carries an IPv4 one (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`): the IPv4 address. */
function embeddedIpv4(address: string): string | undefined {
  const mapped = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return undefined;
  const high = Number.parseInt(hex[1]!, 16);
  const low = Number.parseInt(hex[2]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join(".");
}

/** Why `address` may not be reached under `settings`, or undefined when it may. */
export function refusal(address: string, settings: SsrfSettings): string | undefined {
  const v4 = embeddedIpv4(address);
  const ip = v4 ?? address;
  const family = isIP(ip) === 6 ? "ipv6" : "ipv4";
  if (ranges.never.check(ip, family)) return `${address} is not a unicast address`;
  if (ranges.loopback.check(ip, family) && !settings.allowLoopback) {
    return `${address} is a loopback address (Tools:Web:AllowLoopback is off)`;
  }
  if (ranges.private.check(ip, family) && !settings.allowPrivateNetworks) {
    return `${address} is a private, link-local or CGNAT address (Tools:Web:AllowPrivateNetworks is off)`;
  }
  return undefined;
}

/** The URL parsed, http(s) only. */
export function checkedUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ToolError(`'${text}' is not an absolute URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new PolicyBlock(`only http and https URLs may be fetched, not ${url.protocol}`);
  return url;
}

/** Every address of the URL's host, all checked; the one to connect to. */
export async function checkedAddress(url: URL, settings: SsrfSettings, resolve: HostResolver = systemResolver): Promise<ResolvedAddress> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const literal = isIP(host);
  let addresses: ResolvedAddress[];
  if (literal) addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
  else {
    try {
      addresses = await resolve(host);
    } catch {
      throw new ToolError(`cannot resolve ${host}`);
    }
    if (addresses.length === 0) throw new ToolError(`cannot resolve ${host}`);
  }
  for (const { address } of addresses) {
    const why = refusal(address, settings);
    if (why) throw new PolicyBlock(literal ? why : `${host} resolves to ${why}`);
  }
  return addresses[0]!;
}

/** A `lookup` that answers only the checked address, whatever the name. */
function pinned(address: ResolvedAddress): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address: address.address, family: address.family }]);
    else callback(null, address.address, address.family);
  }) as LookupFunction;
}

export interface GuardedResponse {
  url: string;
  status: number;
  statusText: string;
  contentType: string;
  body: Buffer;
  /** The body was cut at maxBytes. */
  cut: boolean;
}

export interface GuardedFetchOptions {
  settings: SsrfSettings;
  signal: AbortSignal;
  /** Bytes of the body kept (the rest is not read). */
  maxBytes: number;
  resolve?: HostResolver;
  headers?: Record<string, string>;
}

function getOnce(url: URL, address: ResolvedAddress, options: GuardedFetchOptions): Promise<{ response: IncomingMessage }> {
  const request = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolvePromise, reject) => {
    const req = request(
      url,
      {
        method: "GET",
        lookup: pinned(address),
        signal: options.signal,
        headers: {
          "user-agent": "meshwork-agent/1 (web_fetch)",
          accept: "text/html,text/plain,application/json,*/*;q=0.5",
          ...options.headers,
        },
      },
      (response) => resolvePromise({ response }),
    );
    req.on("error", reject);
    req.end();
  });
}

async function readBody(response: IncomingMessage, maxBytes: number): Promise<{ body: Buffer; cut: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    const room = maxBytes - size;
    if (chunk.length >= room) {
      chunks.push(chunk.subarray(0, room));
      response.destroy();
      return { body: Buffer.concat(chunks), cut: chunk.length > room || !response.complete };
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return { body: Buffer.concat(chunks), cut: false };
}

/** GET through the guard, following at most MAX_REDIRECTS redirects, each checked again. */
export async function guardedGet(start: string, options: GuardedFetchOptions): Promise<GuardedResponse> {
  let url = checkedUrl(start);
  for (let hop = 0; ; hop++) {
    const address = await checkedAddress(url, options.settings, options.resolve);
    let response: IncomingMessage;
    try {
      ({ response } = await getOnce(url, address, options));
    } catch (error) {
      if (options.signal.aborted) throw new ToolError(`fetching ${url.href} timed out or was cancelled`);
      throw new ToolError(`fetching ${url.href} failed: ${(error as Error).message}`);
    }
    const status = response.statusCode ?? 0;
    const location = response.headers.location;
    if (status >= 300 && status < 400 && location) {
      response.resume();
      if (hop >= MAX_REDIRECTS) throw new ToolError(`more than ${MAX_REDIRECTS} redirects from ${start}`);
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        throw new ToolError(`redirect to an invalid URL '${location}'`);
      }
      url = checkedUrl(next.href);
      continue;
    }
    try {
      const { body, cut } = await readBody(response, options.maxBytes);
      return {
        url: url.href,
        status,
        statusText: response.statusMessage ?? "",
        contentType: String(response.headers["content-type"] ?? ""),
        body,
        cut,
      };
    } catch (error) {
      if (options.signal.aborted) throw new ToolError(`fetching ${url.href} timed out or was cancelled`);
      throw new ToolError(`reading ${url.href} failed: ${(error as Error).message}`);
    }
  }
}
