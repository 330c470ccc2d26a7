// The agent gateway's settings through the mesh's loader: time spans, the Providers:<name>:* map
// (flags, variables, appsettings arrays, <NAME>_API_KEY), --api-key, Updates and MCP:Servers.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { ConfigError, loadConfig, parseTimeSpan, runtimeSettings } from "../runtime/config/index.js";
import { agentsSettings } from "./index.js";

function load(options: { flags?: string[]; env?: Record<string, string>; files?: Record<string, unknown> } = {}) {
  const cwd = mkdtempSync(join(tmpdir(), "agents-settings-"));
  for (const [name, body] of Object.entries(options.files ?? {})) writeFileSync(join(cwd, name), JSON.stringify(body));
  const config = loadConfig({ schemas: [runtimeSettings, agentsSettings], flags: options.flags ?? [], env: options.env ?? {}, cwd });
  return config.get(agentsSettings);
}

const refusal = (options: Parameters<typeof load>[0]) => {
  const error = (() => {
    try {
      load(options);
    } catch (e) {
      return e;
    }
    return undefined;
  })();
  if (!(error instanceof ConfigError)) throw new Error(`expected a ConfigError, got ${String(error)}`);
  return error.message;
};

test("time spans: [d.]hh:mm:ss[.fffffff], 24:00:00 is a day", (t) => {
  t.is(parseTimeSpan("01:00:00"), 3_600_000);
  t.is(parseTimeSpan("00:05:00"), 300_000);
  t.is(parseTimeSpan("24:00:00"), 86_400_000);
  t.is(parseTimeSpan("1.00:00:00"), 86_400_000);
  t.is(parseTimeSpan("2.03:04:05.5"), ((2 * 24 + 3) * 3600 + 4 * 60 + 5) * 1000 + 500);
  t.is(parseTimeSpan("00:00:00.0000001"), 0);
  for (const bad of ["5m", "00:60:00", "00:00:60", "1:2", "", "-01:00:00", "01:00:00x"]) t.is(parseTimeSpan(bad), undefined, bad);
});

test("defaults", (t) => {
  const s = load();
  t.deepEqual(s.gateway.agents, { maxConcurrentAgents: 10, idleTimeout: 3_600_000, turnTimeout: 300_000 });
  t.like(s.agentGateway, {
    dataDir: "~/.app",
    providerRetryBaseMs: 2000,
    providerProbeSeconds: 30,
    auditCapacity: 10_000,
    maxToolRounds: 25,
    health: { minFreeDiskMb: 100, maxHeapMb: 1024 },
  });
  t.is(s.agentGateway.apiKey, undefined);
  t.deepEqual(s.providers, {});
  t.like(s.updates, {
    checkInterval: 86_400_000,
    autoApply: false,
    notifyChannels: true,
    preRelease: false,
    drainTimeout: 30_000,
    packageId: "app-daemon",
  });
  t.deepEqual(s.MCP.servers, []);
});

test("Gateway:Agents time spans from every layer; a bad one stops naming it", (t) => {
  const s = load({
    files: { "appsettings.json": { Gateway: { Agents: { IdleTimeout: "00:30:00", DefaultProvider: "fake" } } } },
    env: { Gateway__Agents__TurnTimeout: "00:00:45" },
  });
  t.is(s.gateway.agents.idleTimeout, 1_800_000);
  t.is(s.gateway.agents.turnTimeout, 45_000);
  t.is(s.gateway.agents.defaultProvider, "fake");
  t.regex(refusal({ flags: ["--Gateway:Agents:IdleTimeout=an hour"] }), /Gateway:Agents:IdleTimeout = "an hour".*time span/);
  t.regex(refusal({ flags: ["--Gateway:Agents:MaxConcurrentAgents=0"] }), /Gateway:Agents:MaxConcurrentAgents/);
  t.regex(refusal({ flags: ["--Updates:CheckInterval=daily"] }), /Updates:CheckInterval/);
});

test("Providers:<name>:* from flags, variables and appsettings; <NAME>_API_KEY and ASSISTANT_TOKEN", (t) => {
  const s = load({
    files: {
      "appsettings.json": {
        Providers: {
          Local: { BaseUrl: "http://127.0.0.1:11434/v1", Models: ["llama3", "qwen"], Priority: 5 },
          Hosted: { Kind: "assistant", TokenExchangeUrl: "https://exchange.example/token", Models: ["gpt-4o"] },
        },
      },
    },
    env: {
      Providers__openai__BaseUrl: "https://api.openai.com/v1/",
      Providers__openai__Models__0: "gpt-4o-mini",
      Providers__openai__Models__1: "gpt-4o",
      OPENAI_API_KEY: "sk-from-env",
      LOCAL_API_KEY: "ignored-when-ApiKey-set",
      ASSISTANT_TOKEN: "gho_env",
    },
    flags: ["--Providers:local:ApiKey=sk-flag", "--Providers:openai:Priority=1", "--api-key", "sk-default"],
  });
  t.deepEqual(Object.keys(s.providers).sort(), ["Hosted", "Local", "openai"]);
  t.like(s.providers.openai, {
    kind: "openai",
    baseUrl: "https://api.openai.com/v1",
    models: ["gpt-4o-mini", "gpt-4o"],
    priority: 1,
    apiKey: "sk-from-env",
  });
  t.like(s.providers.Local, { models: ["llama3", "qwen"], priority: 5, apiKey: "sk-flag" });
  t.like(s.providers.Hosted, {
    kind: "assistant",
    oauthToken: "gho_env",
    oauthTokenPrefix: "gho_",
    priority: 100,
    dangerouslyDisableSslValidation: false,
  });
  t.is(s.agentGateway.apiKey, "sk-default");
  t.like(load({ flags: ["--Providers:x:BaseUrl=http://h/v1", "--Providers:x:Models=a, b"] }).providers.x, { models: ["a", "b"] });
  t.like(load({ flags: ["--Providers:x:BaseUrl=http://h/v1", '--Providers:x:Models=["a"]'] }).providers.x, { models: ["a"] });
});

test("a bad provider setting stops naming Providers:<name>:<Field>, never showing a key", (t) => {
  const base = ["--Providers:fake:Models:0=m"];
  t.regex(
    refusal({ flags: [...base, "--Providers:fake:BaseUrl=http://h/api"] }),
    /Invalid setting Providers:fake:BaseUrl = "http:\/\/h\/api".*ending \/v1/,
  );
  t.regex(refusal({ flags: ["--Providers:fake:BaseUrl=http://h/v1"] }), /Providers:fake:Models/);
  t.regex(
    refusal({ flags: [...base, "--Providers:fake:BaseUrl=http://h/v1", "--Providers:fake:Colour=red"] }),
    /Providers:fake:Colour.*no such field/,
  );
  t.regex(refusal({ flags: [...base, "--Providers:fake:BaseUrl=http://h/v1", "--Providers:fake:Kind=ollama"] }), /Providers:fake:Kind/);
  t.regex(refusal({ flags: [...base, "--Providers:fake:Kind=assistant"] }), /Providers:fake:TokenExchangeUrl/);
  t.regex(
    refusal({ flags: [...base, "--Providers:fake:BaseUrl=http://h/v1", "--Providers:fake:Priority=first"] }),
    /Providers:fake:Priority/,
  );
  const secret = refusal({
    flags: [...base, "--Providers:fake:BaseUrl=http://h/v1", "--Providers:fake:ApiKey=sk-secret-value", "--Providers:fake:Priority=x"],
  });
  t.notRegex(secret, /sk-secret-value/);
  t.regex(refusal({ flags: ["--Providers:fake=1"] }), /Providers:<name>:<Field>/);
});

test("MCP:Servers: https, http only on loopback", (t) => {
  const servers = (value: unknown) => load({ env: { MCP__Servers: JSON.stringify(value) } }).MCP.servers;
  t.deepEqual(servers([{ Name: "tools", Endpoint: "https://tools.example/mcp", ApiKey: "k" }]), [
    { name: "tools", endpoint: "https://tools.example/mcp", transport: undefined, apiKey: "k" },
  ]);
  t.is(servers([{ Name: "local", Endpoint: "http://127.0.0.1:3000/mcp" }])[0]!.name, "local");
  t.is(servers([{ Name: "local", Endpoint: "http://localhost:3000/mcp" }])[0]!.name, "local");
  t.regex(
    refusal({ env: { MCP__Servers: JSON.stringify([{ Name: "far", Endpoint: "http://tools.example/mcp" }]) } }),
    /MCP:Servers.*"far".*https/,
  );
  t.regex(refusal({ flags: ["--MCP:Servers:0:Name=x", "--MCP:Servers:0:Endpoint=ftp://x"] }), /MCP:Servers/);
});
