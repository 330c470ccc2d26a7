// The bulk exit list parser on the format Tor serves and on what it must survive.
import test from "ava";
import { parseTorExitList } from "./tor-exits.js";

test("one address per line: canonical, distinct, IPv4 then IPv6 in numeric order", (t) => {
  const body = [
    "# Tor bulk exit list",
    "",
    "185.220.101.7",
    "23.129.64.130",
    "  185.220.101.7  ",
    "2001:0DB8:0000:0000:0000:0000:0000:0001",
    "2001:db8::1",
    "2a0b:f4c2::1 # a trailing comment",
    "10.0.0.1\r",
    "2001:db8:0:0:1:0:0:1",
    "::1",
    "9.9.9.9",
  ].join("\n");
  t.deepEqual(parseTorExitList(body), [
    "9.9.9.9",
    "10.0.0.1",
    "23.129.64.130",
    "185.220.101.7",
    "::1",
    "2001:db8::1",
    "2001:db8::1:0:0:1",
    "2a0b:f4c2::1",
  ]);
});

test("invalid lines are skipped, not fatal", (t) => {
  const body = [
    "not an address",
    "256.1.1.1",
    "01.2.3.4",
    "1.2.3",
    "1.2.3.4.5",
    "1.2.3.4 5.6.7.8",
    "ExitAddress 1.2.3.4 2024-01-01 00:00:00",
    "fe80::1%eth0",
    "2001:db8::g",
    "1:2:3:4:5:6:7:8:9",
    "[2001:db8::2]",
    "198.51.100.4",
  ].join("\n");
  t.deepEqual(parseTorExitList(body), ["198.51.100.4"]);
});

test("RFC 5952 compression: the longest run of zero groups, the first of equal runs, never a single group", (t) => {
  t.deepEqual(
    parseTorExitList("2001:db8:0:1:1:1:1:1\n2001:0:0:1:0:0:0:1\n2001:db8:0:0:1:0:0:1\nABCD:EF01:2345:6789:ABCD:EF01:2345:6789\n"),
    ["2001:0:0:1::1", "2001:db8::1:0:0:1", "2001:db8:0:1:1:1:1:1", "abcd:ef01:2345:6789:abcd:ef01:2345:6789"],
  );
});

test("an empty body or one of comments only is an empty list", (t) => {
  t.deepEqual(parseTorExitList(""), []);
  t.deepEqual(parseTorExitList("# nothing today\n\n#\n"), []);
});
