import test from "ava";
import { ConfigError } from "../config/index.js";
import { isLoopbackHost } from "./loopback.js";
import { assertOpenApiBindAllowed, openApiWarning } from "./open-api-guard.js";

const loopback = ["127.0.0.1", "127.8.9.10", "localhost", "LOCALHOST", "::1", "[::1]", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1"];
const publicHosts = [
  "0.0.0.0",
  "::",
  "[::]",
  "10.0.0.5",
  "192.168.1.2",
  "128.0.0.1",
  "::ffff:10.0.0.1",
  "example.com",
  "localhost.example.com",
  "my-host",
];

for (const host of loopback) test(`${host} is loopback`, (t) => t.true(isLoopbackHost(host)));
for (const host of publicHosts) test(`${host} is not loopback`, (t) => t.false(isLoopbackHost(host)));

const frontOn = (host: string) => [
  { setting: "Fronts:Host", host },
  { setting: "Services:Host", host: "127.0.0.1" },
];
const api = (isProtected: boolean, listeners: { setting: string; host: string }[]) => ({
  title: "asset tracking",
  protected: isProtected,
  listeners,
  credentialSetting: "Auth:ApiKeys",
});
const guard =
  (allowAnonymousPublicBind: boolean, ...apis: ReturnType<typeof api>[]) =>
  () =>
    assertOpenApiBindAllowed({ allowAnonymousPublicBind, apis });

test("no credential and a public Fronts:Host: refused, naming both settings", (t) => {
  const error = t.throws(guard(false, api(false, frontOn("0.0.0.0"))), { instanceOf: ConfigError });
  t.regex(error!.message, /Fronts:Host=0\.0\.0\.0 is not a loopback address/);
  t.regex(error!.message, /Auth:AllowAnonymousPublicBind/);
  t.regex(error!.message, /Auth:ApiKeys/);
  t.regex(error!.message, /asset tracking API/);
  t.false(error!.message.includes("Services:Host"), "only the exposed listener is named");
});

test("no credential and a public Services:Host: refused as well", (t) => {
  const error = t.throws(guard(false, api(false, [{ setting: "Services:Host", host: "10.1.2.3" }])));
  t.regex(error!.message, /Services:Host=10\.1\.2\.3/);
});

test("a credential, an explicit allowance or loopback only: allowed", (t) => {
  t.notThrows(guard(false, api(true, frontOn("0.0.0.0"))));
  t.notThrows(guard(true, api(false, frontOn("0.0.0.0"))));
  t.notThrows(guard(false, api(false, frontOn("localhost"))));
});

test("each module answers for itself: a protected one does not cover an open one", (t) => {
  t.throws(guard(false, api(true, frontOn("0.0.0.0")), { ...api(false, frontOn("0.0.0.0")), title: "device protection" }), {
    message: /device protection API/,
  });
});

test("the open-API warning appears only without a credential", (t) => {
  t.is(
    openApiWarning({ title: "asset tracking", protected: false }),
    "no API keys configured: the asset tracking API is open to anyone who can reach it",
  );
  t.is(openApiWarning({ title: "asset tracking", protected: true }), undefined);
});
