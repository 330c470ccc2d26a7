import test from "ava";
import { clientAddressFor, normalizeAddress } from "./client-address.js";

test("an IPv4-mapped address is the IPv4 address", (t) => {
  t.is(normalizeAddress("::ffff:10.1.2.3"), "10.1.2.3");
  t.is(normalizeAddress("2001:DB8::1"), "2001:db8::1");
  t.is(normalizeAddress(undefined), "unknown");
});

test("only a trusted peer's claim is believed; anyone else is its own address", (t) => {
  const trusted = new Set(["10.0.0.5"]);
  t.is(clientAddressFor("::ffff:10.0.0.5", "203.0.113.9", trusted), "203.0.113.9");
  t.is(clientAddressFor("10.0.0.5", undefined, trusted), "10.0.0.5");
  t.is(clientAddressFor("198.51.100.7", "203.0.113.9", trusted), "198.51.100.7", "an outside caller cannot pick its address");
  t.is(clientAddressFor("198.51.100.7", ["a", "b"], trusted), "198.51.100.7");
});
