// Whose X-Forwarded-For is believed: only a trusted proxy's, and only with forwarded headers on.
import type { IncomingMessage } from "node:http";
import test from "ava";
import { clientIpResolver, trustedProxyList } from "./client-ip.js";

const request = (peer: string, forwarded?: string) =>
  ({ socket: { remoteAddress: peer }, headers: forwarded ? { "x-forwarded-for": forwarded } : {} }) as unknown as IncomingMessage;

test("the TCP peer unless a trusted proxy forwards", (t) => {
  const resolve = clientIpResolver({ forwardedHeaders: true, trustedProxies: ["10.0.0.0/8", "::1"] });
  t.is(resolve(request("::ffff:10.1.2.3", "203.0.113.9")), "203.0.113.9");
  t.is(resolve(request("10.1.2.3", "198.51.100.1, 203.0.113.9, 10.9.9.9")), "203.0.113.9", "the right-most untrusted hop");
  t.is(resolve(request("192.0.2.44", "203.0.113.9")), "192.0.2.44", "an untrusted peer cannot claim an address");
  t.is(resolve(request("::1", "garbage")), "::1");
  t.is(resolve(request("10.1.2.3")), "10.1.2.3");
  const off = clientIpResolver({ forwardedHeaders: false, trustedProxies: ["10.0.0.0/8"] });
  t.is(off(request("10.1.2.3", "203.0.113.9")), "10.1.2.3");
});

test("bad proxies are refused naming the entry", (t) => {
  t.throws(() => trustedProxyList(["10.0.0.0/40"]), { message: /10\.0\.0\.0\/40/ });
  t.throws(() => trustedProxyList(["proxy.local"]), { message: /proxy\.local/ });
});
