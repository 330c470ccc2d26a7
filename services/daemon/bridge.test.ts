// The bridge: bridge.json seeded once from Bridge:*, the `bridge` commands and their status report,
// the WebSocket client against a fake chat gateway on loopback (connect frame, ok, Passthrough
// observes, Intercept answers with chat.send, a refusal reconnects with backoff), and a running
// daemon following `bridge disable` / `enable` at once.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import test from "ava";
import { type WebSocket, WebSocketServer } from "ws";
import { startFakeOpenAi } from "../../test/support/fake-openai.js";
import { until } from "../../test/support/until.js";
import { bridgeReport, parseChannelModes } from "./bridge.js";
import { type BridgeChat, readChat, startBridgeClient } from "./bridge-client.js";
import { runDaemonCommand } from "./cli.js";

const bin = fileURLToPath(new URL("../../bin/app-daemon.js", import.meta.url));
const TOKEN = "bridge-token-secret-9";

async function command(args: string[]): Promise<{ code: number; out: string }> {
  let out = "";
  const code = await runDaemonCommand(args, (text) => {
    out += text;
  });
  return { code, out };
}

interface Frame {
  type: string;
  id?: string;
  method?: string;
  params?: Record<string, unknown>;
}

/** A chat gateway on loopback: answers `connect` with `ok` (or a refusal while `refuse` is set) and records every frame. */
async function fakeGateway(t: import("ava").ExecutionContext) {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  const gateway = { frames: [] as Frame[], sockets: [] as WebSocket[], connections: 0, closes: 0, refuse: false };
  server.on("connection", (ws) => {
    gateway.connections++;
    gateway.sockets.push(ws);
    ws.on("close", () => {
      gateway.closes++;
    });
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as Frame;
      gateway.frames.push(frame);
      if (frame.method === "connect") {
        ws.send(
          JSON.stringify(
            gateway.refuse
              ? { type: "res", id: frame.id, ok: false, error: { message: "bad token" } }
              : { type: "res", id: frame.id, ok: true, payload: { protocol: 3 } },
          ),
        );
      } else if (frame.type === "req") {
        ws.send(JSON.stringify({ type: "res", id: frame.id, ok: true, payload: {} }));
      }
    });
  });
  t.teardown(() => {
    for (const ws of gateway.sockets) ws.terminate();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws`;
  const emit = (payload: unknown) => gateway.sockets.at(-1)!.send(JSON.stringify({ type: "event", event: "chat", payload }));
  return { url, gateway, emit };
}

test("bridge.json is seeded once from Bridge:*; enable, disable, passthrough and status --json", async (t) => {
  const dataDir = join(await mkdtemp(join(tmpdir(), "bridge-")), "app");
  const seed = [
    `--AgentGateway:DataDir=${dataDir}`,
    "--Daemon:ServiceManager=process",
    "--Bridge:ChannelModes=telegram=Intercept,slack=Passthrough",
  ];
  const status = await command(["bridge", "status", "--json", ...seed]);
  t.is(status.code, 0);
  t.deepEqual(JSON.parse(status.out), {
    enabled: false,
    autoConnect: false,
    defaultMode: "Passthrough",
    channels: { telegram: { mode: "Intercept" }, slack: { mode: "Passthrough" } },
    overrideActive: true,
    overrideChannels: ["telegram"],
    effectiveMode: "Disabled",
    connected: false,
  });
  t.like(JSON.parse(readFileSync(join(dataDir, "bridge.json"), "utf8")), { enabled: false, defaultMode: "Passthrough" });

  const enabled = JSON.parse((await command(["bridge", "enable", "--json", ...seed])).out);
  t.like(enabled, { enabled: true, autoConnect: true, effectiveMode: "Override", overrideChannels: ["telegram"] });
  // Seeded once: other settings no longer change the file.
  const again = JSON.parse(
    (await command(["bridge", "status", "--json", `--AgentGateway:DataDir=${dataDir}`, "--Bridge:ChannelModes=discord=Intercept"])).out,
  );
  t.deepEqual(Object.keys(again.channels).sort(), ["slack", "telegram"]);
  t.like(again, { enabled: true });

  const passthrough = JSON.parse((await command(["bridge", "passthrough", "--json", ...seed])).out);
  t.like(passthrough, { enabled: true, overrideActive: false, overrideChannels: [], effectiveMode: "Passthrough" });
  t.deepEqual(passthrough.channels, { telegram: { mode: "Passthrough" }, slack: { mode: "Passthrough" } });

  const disabled = await command(["bridge", "disable", ...seed]);
  t.is(disabled.out, "bridge disabled, not connected\n");
  t.like(JSON.parse(readFileSync(join(dataDir, "bridge.json"), "utf8")), { enabled: false, autoConnect: false });

  await t.throwsAsync(() => command(["bridge", "bogus"]), { message: /Unknown bridge command 'bogus'/ });
  await t.throwsAsync(() => command(["bridge"]), { message: /bridge needs one of: status, enable, disable, passthrough/ });
  t.throws(() => parseChannelModes("telegram=Loud"), { message: /Invalid setting Bridge:ChannelModes entry "telegram=Loud"/ });
  t.like(bridgeReport({ enabled: true, autoConnect: false, defaultMode: "Intercept", channels: {} }, true), {
    overrideActive: true,
    effectiveMode: "Override",
    connected: true,
  });
});

test("the client: connect frame, connected on ok; Passthrough observes, Intercept answers with chat.send; a refusal reconnects", async (t) => {
  const { url, gateway, emit } = await fakeGateway(t);
  const observed: BridgeChat[] = [];
  const logs: string[] = [];
  gateway.refuse = true;
  const client = startBridgeClient({
    url,
    token: TOKEN,
    modeOf: (channel) => (channel === "telegram" ? "Intercept" : "Passthrough"),
    observe: async (chat) => {
      observed.push(chat);
    },
    answer: async (chat) => `echo: ${chat.text}`,
    log: (level, message) => logs.push(`${level} ${message}`),
    initialDelayMs: 20,
    maxDelayMs: 100,
  });
  t.teardown(() => client.close());
  await until(() => gateway.connections >= 2, "a reconnect after the refusal");
  t.false(client.connected);
  t.true(logs.some((l) => l === "warn the bridge gateway refused connect: bad token"));
  gateway.refuse = false;
  await until(() => client.connected, "connected once the gateway says ok");
  const connect = gateway.frames.filter((f) => f.method === "connect").at(-1)!;
  t.like(connect, { type: "req", params: { minProtocol: 3, maxProtocol: 3, role: "operator", auth: { token: TOKEN } } });
  t.is(typeof connect.id, "string");

  emit({ channel: "slack", sessionKey: "C1", text: "hi from slack" });
  await until(() => observed.length === 1, "the slack message observed");
  t.like(observed[0], { channel: "slack", conversation: "C1", text: "hi from slack" });
  emit({ channel: "telegram", sessionKey: "42", message: { text: "hello" } });
  const sent = await until(() => gateway.frames.find((f) => f.method === "chat.send"), "chat.send");
  t.like(sent, { type: "req", params: { channel: "telegram", sessionKey: "42", message: "echo: hello" } });
  t.is(observed.length, 1, "an intercepted message is answered, not only observed");
  t.false(logs.join("\n").includes(TOKEN), "the token is never logged");

  t.is(readChat({ channel: "telegram", sessionKey: "42", text: "x", role: "assistant" }), undefined, "own replies are not answered");
  t.is(readChat({ channel: "telegram" }), undefined);
  client.close();
  await until(() => gateway.closes === gateway.connections, "closed");
  t.false(client.connected);
});

test("a running daemon follows bridge.json at once (disable closes, enable connects again); Passthrough is audited, Intercept answered by an agent", async (t) => {
  t.timeout(300_000);
  const base = await mkdtemp(join(tmpdir(), "bridge-daemon-"));
  const dataDir = join(base, "app");
  const { url, gateway, emit } = await fakeGateway(t);
  const openai = await startFakeOpenAi({ models: ["m1"] });
  t.teardown(() => openai.close());
  const flags = [
    `--Providers:fake:BaseUrl=${openai.url}`,
    `--Providers:fake:ApiKey=${openai.apiKey}`,
    "--Providers:fake:Models=m1",
    "--Bridge:ChannelModes=telegram=Intercept,slack=Passthrough",
    `--AgentGateway:DataDir=${dataDir}`,
    "--Daemon:ServiceManager=process",
    "--Bridge:Enabled=true",
    "--Bridge:AutoConnect=true",
    `--Bridge:Url=${url}`,
    `--Bridge:Token=${TOKEN}`,
  ];
  const child = spawn(
    process.execPath,
    [
      bin,
      "run",
      `--Data:Dir=${join(base, "data")}`,
      "--Services:Port=0",
      "--Fronts:Tracking:Port=0",
      "--Fronts:Protection:Port=0",
      "--Gateway:Server:Port=0",
      "--Telemetry:Exporter=none",
      "--Gateway:Telemetry:Enabled=false",
      "--Protection:TorExits:SourceUrl=http://127.0.0.1:9/none",
      "--Logging:Level=warn",
      ...flags,
    ],
    { env: { PATH: process.env.PATH, HOME: base }, stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  t.teardown(() => child.kill("SIGKILL"));
  await until(() => gateway.frames.some((f) => f.method === "connect") || child.exitCode !== null, "the daemon's connect", {
    timeoutMs: 240_000,
  });
  t.is(child.exitCode, null, stderr.slice(0, 500));
  await until(async () => JSON.parse((await command(["bridge", "status", "--json", ...flags])).out).connected, "status: connected");
  const disabled = JSON.parse((await command(["bridge", "disable", "--json", ...flags])).out);
  t.like(disabled, { enabled: false, effectiveMode: "Disabled", connected: false });
  await until(() => gateway.closes >= 1, "the bridge closed at once");
  const enabled = await command(["bridge", "enable", "--json", ...flags]);
  t.like(JSON.parse(enabled.out), { enabled: true, autoConnect: true });
  await until(() => gateway.frames.filter((f) => f.method === "connect").length >= 2, "connected again");
  await until(async () => JSON.parse((await command(["bridge", "status", "--json", ...flags])).out).connected, "status: connected again");
  t.true(existsSync(join(dataDir, "bridge.json")));

  const status = JSON.parse((await command(["status", "--json", ...flags])).out) as { fronts?: { name: string; url: string }[] };
  const agents = status.fronts?.find((f) => f.name === "agents")?.url;
  t.truthy(agents);
  emit({ channel: "slack", sessionKey: "C7", text: "just watching" });
  const audited = await until(async () => {
    const text = await (await fetch(new URL("/api/audit/events?limit=100", agents))).text();
    return text.includes('"bridge.observe"') ? text : undefined;
  }, "the audit entry of an observed message");
  t.regex(audited, /"resource":"slack"/);
  t.false(audited.includes("just watching"), "the audit entry holds no message text");
  emit({ channel: "telegram", sessionKey: "99", text: "hello agent" });
  const sent = await until(() => gateway.frames.find((f) => f.method === "chat.send"), "the agent's answer sent back");
  t.like(sent, { params: { channel: "telegram", sessionKey: "99", message: "Hello from the fake." } });
  t.is(openai.chatRequests().length, 1, "one turn, for the intercepted message only");
  child.kill("SIGTERM");
  t.is(await exited, 0);
  t.false(stderr.includes(TOKEN), "the token is in no log line");
});
