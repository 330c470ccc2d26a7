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

const gatewayOn = (host: string) => [
  { setting: "Gateway:Host", host },
  { setting: "Services:Host", host: "127.0.0.1" },
];

test("no key and a public Gateway:Host: refused, naming both settings", (t) => {
  const error = t.throws(
    () => assertOpenApiBindAllowed({ apiKeyCount: 0, allowAnonymousPublicBind: false, listeners: gatewayOn("0.0.0.0") }),
    { instanceOf: ConfigError },
  );
  t.regex(error!.message, /Gateway:Host=0\.0\.0\.0 is not a loopback address/);
  t.regex(error!.message, /Auth:AllowAnonymousPublicBind/);
  t.regex(error!.message, /Auth:ApiKeys/);
  t.false(error!.message.includes("Services:Host"), "only the exposed listener is named");
});

test("no key and a public Services:Host: refused as well", (t) => {
  const error = t.throws(() =>
    assertOpenApiBindAllowed({
      apiKeyCount: 0,
      allowAnonymousPublicBind: false,
      listeners: [{ setting: "Services:Host", host: "10.1.2.3" }],
    }),
  );
  t.regex(error!.message, /Services:Host=10\.1\.2\.3/);
});

test("keys, an explicit allowance or loopback only: allowed", (t) => {
  t.notThrows(() => assertOpenApiBindAllowed({ apiKeyCount: 1, allowAnonymousPublicBind: false, listeners: gatewayOn("0.0.0.0") }));
  t.notThrows(() => assertOpenApiBindAllowed({ apiKeyCount: 0, allowAnonymousPublicBind: true, listeners: gatewayOn("0.0.0.0") }));
  t.notThrows(() => assertOpenApiBindAllowed({ apiKeyCount: 0, allowAnonymousPublicBind: false, listeners: gatewayOn("localhost") }));
});

test("the open-API warning appears only without keys", (t) => {
  t.is(openApiWarning(0, ["tracking"]), "no API keys configured: the tracking API is open to anyone who can reach it");
  t.is(openApiWarning(2, ["tracking"]), undefined);
});
