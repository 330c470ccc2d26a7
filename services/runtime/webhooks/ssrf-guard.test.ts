// The destination guard: classification of every address range it knows, IPv6 and IPv4 embedded
// in IPv6 included; what each setting allows; and refusal when any resolved address is refused.
import test from "ava";
import { checkDestination, classifyAddress, isAllowed, pinnedLookup, RefusedDestination, type AddressClass } from "./ssrf-guard.js";

const table: [string, AddressClass][] = [
  ["8.8.8.8", "public"],
  ["1.1.1.1", "public"],
  ["93.184.216.34", "public"],
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["10.0.0.1", "private"],
  ["10.255.255.255", "private"],
  ["172.16.0.1", "private"],
  ["172.31.255.255", "private"],
  ["172.15.255.255", "public"],
  ["172.32.0.0", "public"],
  ["192.168.1.1", "private"],
  ["192.169.0.1", "public"],
  ["169.254.169.254", "link-local"],
  ["100.64.0.1", "cgnat"],
  ["100.127.255.255", "cgnat"],
  ["100.63.255.255", "public"],
  ["100.128.0.0", "public"],
  ["0.0.0.0", "unspecified"],
  ["0.1.2.3", "unspecified"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast"],
  ["240.0.0.1", "reserved"],
  ["255.255.255.255", "reserved"],
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["[::1]", "loopback"],
  ["0:0:0:0:0:0:0:1", "loopback"],
  ["fc00::1", "private"],
  ["fd12:3456:789a::1", "private"],
  ["fe80::1", "link-local"],
  ["fe80::1%eth0", "link-local"],
  ["febf::1", "link-local"],
  ["fec0::1", "private"],
  ["ff02::1", "multicast"],
  ["2001:db8::1", "reserved"],
  ["2606:4700:4700::1111", "public"],
  ["2a00:1450:4001:80b::200e", "public"],
  // IPv4-mapped, in dotted and in hex form
  ["::ffff:127.0.0.1", "loopback"],
  ["::ffff:7f00:1", "loopback"],
  ["::ffff:10.1.2.3", "private"],
  ["::ffff:169.254.169.254", "link-local"],
  ["::ffff:0:0", "unspecified"],
  ["0:0:0:0:0:ffff:192.168.0.1", "private"],
  ["::ffff:8.8.8.8", "public"],
  // IPv4-compatible (deprecated), NAT64 and 6to4 carry an IPv4 address too
  ["::127.0.0.1", "loopback"],
  ["64:ff9b::10.0.0.1", "private"],
  ["64:ff9b::8.8.8.8", "public"],
  ["2002:7f00:1::", "loopback"],
  ["2002:0808:0808::1", "public"],
];

for (const [address, expected] of table) {
  test(`${address} is ${expected}`, (t) => {
    t.is(classifyAddress(address), expected);
  });
}

test("what each setting allows", (t) => {
  const none = { allowLoopback: false, allowPrivateNetworks: false };
  const loop = { allowLoopback: true, allowPrivateNetworks: false };
  const priv = { allowLoopback: false, allowPrivateNetworks: true };
  const all = { allowLoopback: true, allowPrivateNetworks: true };
  t.true(isAllowed("public", none));
  t.false(isAllowed("loopback", none));
  t.true(isAllowed("loopback", loop));
  t.false(isAllowed("loopback", priv));
  for (const kind of ["private", "link-local", "cgnat"] as const) {
    t.false(isAllowed(kind, none), kind);
    t.false(isAllowed(kind, loop), kind);
    t.true(isAllowed(kind, priv), kind);
  }
  for (const kind of ["unspecified", "multicast", "reserved"] as const) t.false(isAllowed(kind, all), kind);
});

const none = { allowLoopback: false, allowPrivateNetworks: false };
const table2 = (answers: Record<string, string[]>) => async (host: string) =>
  (answers[host] ?? []).map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));

test("a name is checked by every address it resolves to", async (t) => {
  const resolve = table2({ "public.example": ["93.184.216.34", "2606:4700:4700::1111"], "mixed.example": ["93.184.216.34", "10.0.0.5"] });
  const ok = await checkDestination(new URL("https://public.example/hook"), none, resolve);
  t.is(ok.addresses.length, 2);
  const err = await t.throwsAsync(checkDestination(new URL("https://mixed.example/hook"), none, resolve), {
    instanceOf: RefusedDestination,
  });
  t.regex(err!.message, /mixed\.example resolves to 10\.0\.0\.5, which is a private-network address/);
});

test("IP literals are checked without resolving, IPv6 in brackets too", async (t) => {
  const resolve = async () => {
    throw new Error("must not resolve a literal");
  };
  await t.throwsAsync(checkDestination(new URL("http://127.0.0.1:8080/"), none, resolve), {
    message: /127\.0\.0\.1 is a loopback address/,
  });
  await t.throwsAsync(checkDestination(new URL("http://[::ffff:169.254.169.254]/"), none, resolve), { instanceOf: RefusedDestination });
  await t.throwsAsync(checkDestination(new URL("http://0.0.0.0/"), { allowLoopback: true, allowPrivateNetworks: true }, resolve), {
    message: /never allowed/,
  });
  const ok = await checkDestination(new URL("http://127.0.0.1:8080/"), { allowLoopback: true, allowPrivateNetworks: false }, resolve);
  t.deepEqual(ok.addresses, [{ address: "127.0.0.1", family: 4 }]);
});

test("the pinned lookup answers only the checked addresses", (t) => {
  const lookup = pinnedLookup({
    addresses: [
      { address: "93.184.216.34", family: 4 },
      { address: "2606:4700:4700::1111", family: 6 },
    ],
  });
  lookup("anything.example", {}, (err, address, family) => {
    t.is(err, null);
    t.is(address, "93.184.216.34");
    t.is(family, 4);
  });
  lookup("anything.example", { all: true }, (_err, addresses) => {
    t.is((addresses as unknown[]).length, 2);
  });
});
