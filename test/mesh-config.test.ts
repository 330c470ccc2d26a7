import test from "ava";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadMeshConfig, type MeshConfig } from "../services/mesh-config.js";
import { modules } from "../services/registry.js";
import { ConfigError, type LoadConfigOptions, redactUrl } from "../services/runtime/config/index.js";

/** Every module's settings and the runtime's, merged into one object for reading in assertions. */
// biome-ignore lint/suspicious/noExplicitAny: a merged view of several typed trees
type View = Record<string, any>;
function merge(into: View, from: View): View {
  for (const [k, v] of Object.entries(from)) {
    into[k] = v !== null && typeof v === "object" && !Array.isArray(v) ? merge(into[k] ?? {}, v) : v;
  }
  return into;
}
function loadConfig(options: Omit<LoadConfigOptions, "schemas">): View & { config: MeshConfig } {
  const config = loadMeshConfig(options);
  const view = merge({}, config.runtime);
  for (const m of modules) merge(view, config.get(m.settings));
  return Object.assign(view, { config, environment: config.environment, otelEnv: config.otelEnv });
}

function dirWith(files: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), "meshwork-config-"));
  for (const [name, body] of Object.entries(files)) writeFileSync(join(dir, name), JSON.stringify(body));
  return dir;
}

test("defaults apply when nothing is configured", (t) => {
  const config = loadConfig({ env: {}, cwd: dirWith({}) });
  t.is(config.environment, "Production");
  t.is(config.services.port, 9090);
  t.is(config.fronts.tracking.port, 8080);
  t.is(config.fronts.protection.port, 8081);
  t.is(config.gateway.server.port, 18789);
  t.is(config.fronts.bodyLimitBytes, 1024 * 1024);
  t.is(config.telemetry.exporter, "console");
  t.is(config.database.url, undefined);
  t.is(config.nats.url, undefined);
});

test("layers: defaults < appsettings.json < appsettings.{Environment}.json < env < flags", (t) => {
  const cwd = dirWith({
    "appsettings.json": {
      Fronts: { Tracking: { Port: 1001 }, Protection: { Port: 1002 } },
      Gateway: { Server: { Port: 1003 } },
      Services: { Port: 1004 },
    },
    "appsettings.Staging.json": { Fronts: { Protection: { Port: 2002 } }, Gateway: { Server: { Port: 2003 } }, Services: { Port: 2004 } },
  });
  const config = loadConfig({
    cwd,
    env: { MESHWORK_ENVIRONMENT: "Staging", Gateway__Server__Port: "3003", Services__Port: "3004" },
    flags: ["--Services:Port=4004"],
  });
  t.is(config.fronts.tracking.port, 1001);
  t.is(config.fronts.protection.port, 2002);
  t.is(config.gateway.server.port, 3003);
  t.is(config.services.port, 4004);
  t.is(config.config.sources.get("Services:Port"), "flag --Services:Port");
  t.is(config.config.sources.get("Gateway:Server:Port"), "environment variable Gateway__Server__Port");
});

test("keys are case-insensitive and flags take a separate value too", (t) => {
  const config = loadConfig({ env: { LOGGING__LEVEL: "debug" }, cwd: dirWith({}), flags: ["--fronts:host", "0.0.0.0"] });
  t.is(config.logging.level, "debug");
  t.is(config.fronts.host, "0.0.0.0");
});

test("DATABASE_URL and NATS_URL are accepted; Section__Key wins over the alias", (t) => {
  const a = loadConfig({ env: { DATABASE_URL: "postgres://u:pw@db:5432/x", NATS_URL: "nats://bus:4222" }, cwd: dirWith({}) });
  t.is(a.database.url, "postgres://u:pw@db:5432/x");
  t.is(a.nats.url, "nats://bus:4222");
  const b = loadConfig({ env: { DATABASE_URL: "postgres://a/x", Database__Url: "postgres://b/y" }, cwd: dirWith({}) });
  t.is(b.database.url, "postgres://b/y");
});

test("NATS_URL may list several servers; each must be a NATS URL", (t) => {
  const config = loadConfig({ env: { NATS_URL: "nats://a:4222, nats://u:pw@b:4222" }, cwd: dirWith({}) });
  t.is(config.nats.url, "nats://a:4222, nats://u:pw@b:4222");
  t.is(redactUrl(config.nats.url!), "nats://a:4222,nats://***:***@b:4222");
  t.throws(() => loadConfig({ env: { NATS_URL: "nats://a:4222,http://b" }, cwd: dirWith({}) }), { message: /comma-separated URLs/ });
});

test("Services:<Name>:Address takes a comma-separated list; a bad item names the setting and the item", (t) => {
  const config = loadConfig({
    env: {},
    cwd: dirWith({}),
    flags: ["--Services:Tracking:Address=http://10.0.0.1:9090, http://10.0.0.2:9090"],
  });
  t.is(config.services.tracking.address, "http://10.0.0.1:9090, http://10.0.0.2:9090");
  for (const [value, item] of [
    ["http://a:9090,https://b:9090", /item 2 of 2, 'https:\/\/b:9090'/],
    ["http://a:9090,,http://b:9090", /item 2 of 3, ''/],
    ["http://a:9090,", /item 2 of 2/],
  ] as const) {
    const err = t.throws(() => loadConfig({ env: {}, cwd: dirWith({}), flags: [`--Services:Protection:Address=${value}`] }), {
      instanceOf: ConfigError,
    });
    t.regex(err!.message, /Invalid setting Services:Protection:Address/);
    t.regex(err!.message, /comma-separated URLs starting with http:\/\//);
    t.regex(err!.message, item);
  }
  // A secret list names the bad item's place, never its text.
  const nats = t.throws(() => loadConfig({ env: { NATS_URL: "nats://a:4222,http://u:pw@b" }, cwd: dirWith({}) }));
  t.regex(nats!.message, /item 2 of 2 is not one/);
  t.false(nats!.message.includes("pw"));
});

test("a bad value stops with a message naming the setting and its source", (t) => {
  const err = t.throws(() => loadConfig({ env: { Fronts__Tracking__Port: "eighty" }, cwd: dirWith({}) }), { instanceOf: ConfigError });
  t.regex(err!.message, /Fronts:Tracking:Port/);
  t.regex(err!.message, /environment variable Fronts__Tracking__Port/);
  t.regex(err!.message, /integer from 0 to 65535/);
  t.throws(() => loadConfig({ env: {}, cwd: dirWith({}), flags: ["--Telemetry:Exporter=jaeger"] }), {
    message: /one of console, otlp, zipkin, none/,
  });
  t.throws(() => loadConfig({ env: { DATABASE_URL: "mysql://x" }, cwd: dirWith({}) }), { message: /Database:Url = <redacted>/ });
});

test("an unknown key under a known section is refused; unrelated variables are ignored", (t) => {
  t.throws(() => loadConfig({ env: { Fronts__Trakcing__Port: "1" }, cwd: dirWith({}) }), {
    message: /Unknown setting Fronts:Trakcing:Port/,
  });
  t.throws(() => loadConfig({ env: {}, cwd: dirWith({ "appsettings.json": { Nats: { Uri: "x" } } }) }), {
    message: /Unknown setting Nats:Uri \(from appsettings.json\)/,
  });
  t.notThrows(() => loadConfig({ env: { SOME_OTHER__THING: "1", PATH: "/bin" }, cwd: dirWith({}) }));
});

test("invalid JSON in appsettings.json names the file", (t) => {
  const cwd = mkdtempSync(join(tmpdir(), "meshwork-config-"));
  writeFileSync(join(cwd, "appsettings.json"), "{ nope");
  t.throws(() => loadConfig({ env: {}, cwd }), { message: /appsettings.json is not valid JSON/ });
});

test("OTEL_* variables pass through to telemetry untouched", (t) => {
  const config = loadConfig({ env: { OTEL_TRACES_EXPORTER: "zipkin", OTEL_SERVICE_NAME: "x" }, cwd: dirWith({}) });
  t.deepEqual(config.otelEnv, { OTEL_TRACES_EXPORTER: "zipkin", OTEL_SERVICE_NAME: "x" });
});

const OPS_KEY = "ops-key-0123456789abcdef";
const INGEST_KEY = "ingest-key-0123456789abcdef";

test("list settings: a JSON array in appsettings, typed with lower-case roles", (t) => {
  const cwd = dirWith({
    "appsettings.json": {
      Auth: {
        ApiKeys: [
          { Name: "ops", Role: "Operator", Key: OPS_KEY },
          { name: "van", role: "ingest", key: INGEST_KEY },
        ],
      },
    },
  });
  const config = loadConfig({ env: {}, cwd });
  t.deepEqual(config.auth.apiKeys, [
    { name: "ops", role: "operator", key: OPS_KEY },
    { name: "van", role: "ingest", key: INGEST_KEY },
  ]);
});

test("list settings: JSON text in a variable, or one field at a time with an index; the later layer replaces the list", (t) => {
  const cwd = dirWith({ "appsettings.json": { Auth: { ApiKeys: [{ Name: "file", Role: "operator", Key: OPS_KEY }] } } });
  const fromJson = loadConfig({ cwd, env: { Auth__ApiKeys: JSON.stringify([{ Name: "env", Role: "ingest", Key: INGEST_KEY }]) } });
  t.deepEqual(fromJson.auth.apiKeys, [{ name: "env", role: "ingest", key: INGEST_KEY }]);

  const fromIndexed = loadConfig({
    cwd,
    env: {
      Webhooks__Endpoints__1__Url: "https://b.example/hook",
      Webhooks__Endpoints__0__Url: "https://a.example/hook",
      Webhooks__Endpoints__0__Events: "speed_alert, geofence_breach",
      Webhooks__Endpoints__0__Secret: "whsec_c2VjcmV0",
    },
    flags: ["--Auth:ApiKeys:0:Name=flag", "--Auth:ApiKeys:0:Role=operator", `--Auth:ApiKeys:0:Key=${OPS_KEY}`],
  });
  t.deepEqual(fromIndexed.webhooks.endpoints, [
    { url: "https://a.example/hook", secret: "whsec_c2VjcmV0", events: ["speed_alert", "geofence_breach"] },
    { url: "https://b.example/hook", events: [] },
  ]);
  t.deepEqual(fromIndexed.auth.apiKeys, [{ name: "flag", role: "operator", key: OPS_KEY }]);
  t.is(fromIndexed.config.sources.get("Auth:ApiKeys"), "flag --Auth:ApiKeys:0:Name");
});

test("list settings: a bad record names the setting and the problem, never the secret", (t) => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ Auth__ApiKeys: "not json" }, /Auth:ApiKeys .*JSON array/],
    [{ Auth__ApiKeys: JSON.stringify([{ Name: "x", Role: "admin", Key: OPS_KEY }]) }, /Role must be one of ingest, operator/],
    [{ Auth__ApiKeys: JSON.stringify([{ Name: "x", Role: "ingest", Key: "short-secret" }]) }, /Key must have at least 16 characters/],
    [{ Auth__ApiKeys: JSON.stringify([{ Name: "x", Role: "ingest" }]) }, /item 0 lacks Key/],
    [{ Auth__ApiKeys: JSON.stringify([{ Name: "x", Role: "ingest", Key: OPS_KEY, Colour: "red" }]) }, /unknown field Colour/],
    [{ Webhooks__Endpoints__0__Secret: "whsec_c2VjcmV0" }, /Webhooks:Endpoints .*lacks Url/],
  ];
  for (const [env, message] of cases) {
    const error = t.throws(() => loadConfig({ env, cwd: dirWith({}) }), { instanceOf: ConfigError });
    t.regex(error!.message, message);
    t.false(error!.message.includes("short-secret") || error!.message.includes(OPS_KEY) || error!.message.includes("c2VjcmV0"));
  }
});

test("a renamed setting stops start-up naming its new name, from any layer", (t) => {
  const cases: [Omit<LoadConfigOptions, "schemas">, RegExp][] = [
    [
      { env: { Gateway__Tracking__Port: "1" } },
      /Gateway:Tracking:Port \(from environment variable Gateway__Tracking__Port\) is now called Fronts:Tracking:Port/,
    ],
    [{ env: {}, flags: ["--Gateway:Host=0.0.0.0"] }, /Gateway:Host .* is now called Fronts:Host/],
    [{ env: { GATEWAY__AGENTS__PORT: "1" } }, /is now called Gateway:Server:Port/],
    [{ env: { Gateway__BodyLimitBytes: "1" } }, /is now called Fronts:BodyLimitBytes/],
    [{ env: {}, flags: ["--Gateway:SseKeepAliveSeconds=2"] }, /is now called Fronts:SseKeepAliveSeconds/],
    [
      { env: {}, cwd: dirWith({ "appsettings.json": { Gateway: { Protection: { Port: 1 } } } }) },
      /\(from appsettings.json\) is now called Fronts:Protection:Port/,
    ],
  ];
  for (const [options, message] of cases) {
    t.throws(() => loadConfig({ cwd: dirWith({}), ...options }), { instanceOf: ConfigError, message });
  }
});

test("a relative Data:Dir is resolved against the working directory, the default too", (t) => {
  const cwd = dirWith({});
  t.is(loadConfig({ env: {}, cwd }).data.dir, join(cwd, ".data"));
  t.is(loadConfig({ env: {}, cwd, flags: ["--Data:Dir=state/here"] }).data.dir, join(cwd, "state/here"));
  t.is(loadConfig({ env: {}, cwd, flags: ["--Data:Dir=/var/lib/x"] }).data.dir, "/var/lib/x");
});

test("every registered module's settings are known, and no key is declared twice", (t) => {
  const config = loadConfig({ env: { Tracking__ExportMaxRows: "7", Fronts__Protection__Port: "9" }, cwd: dirWith({}) });
  t.is(config.tracking.exportMaxRows, 7);
  t.is(config.fronts.protection.port, 9);
});
