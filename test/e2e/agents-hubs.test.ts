// The agent gateway's hubs through a whole mesh, with the clients others write: @microsoft/signalr
// over WebSockets for /hubs/agent (StreamChat against the loopback OpenAI fake, ListAgents, a role
// too low) and /hubs/events (StreamEvents with a filter, the pushed ActivityEvent and
// ChannelStatusChanged), and eventsource for the plain GET /hubs/events.
import { HttpTransportType, type HubConnection, HubConnectionBuilder, LogLevel } from "@microsoft/signalr";
import test, { type ExecutionContext } from "ava";
import { EventSource } from "eventsource";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeOpenAi, startFakeOpenAi } from "../support/fake-openai.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

const KEYS = { user: "hub-user-key-0a1b2c3d4e5f", operator: "hub-operator-key-0a1b2c3d4e5f", admin: "hub-admin-key-0a1b2c3d4e5f" };

let mesh: TestMesh;
let fake: FakeOpenAi;
let base: string;
let dataDir: string;

test.before(async () => {
  fake = await startFakeOpenAi();
  dataDir = mkdtempSync(join(tmpdir(), "agents-hubs-"));
  mesh = await startTestMesh({
    flags: [
      `--AgentGateway:DataDir=${dataDir}`,
      `--Providers:fake:BaseUrl=${fake.url}`,
      `--Providers:fake:ApiKey=${fake.apiKey}`,
      "--Providers:fake:Models:0=gpt-4o-mini",
      "--Gateway:Auth:Enabled=true",
      "--Gateway:RateLimit:Enabled=false",
      `--Gateway:Auth:ApiKeys=${JSON.stringify([
        { Key: KEYS.user, Name: "viewer", Role: "User" },
        { Key: KEYS.operator, Name: "op", Role: "Operator" },
        { Key: KEYS.admin, Name: "root", Role: "Admin" },
      ])}`,
    ],
  });
  base = mesh.frontUrl("agents");
});

test.after.always(async () => {
  await mesh?.close();
  await fake?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function connect(t: ExecutionContext, hub: string, key: string, skipNegotiation = false): Promise<HubConnection> {
  const connection = new HubConnectionBuilder()
    .withUrl(`${base}${hub}?api_key=${key}`, { transport: HttpTransportType.WebSockets, skipNegotiation })
    .configureLogging(LogLevel.None)
    .build();
  await connection.start();
  t.teardown(() => connection.stop());
  return connection;
}

async function spawn(): Promise<{ id: string }> {
  const res = await fetch(`${base}/api/agents`, { method: "POST", headers: { "x-api-key": KEYS.admin } });
  if (res.status !== 201) throw new Error(`spawn answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as { id: string };
}

function streamOf<T>(connection: HubConnection, method: string, ...args: unknown[]): Promise<T[]> {
  const items: T[] = [];
  return new Promise((resolve, reject) =>
    connection.stream<T>(method, ...args).subscribe({ next: (item) => items.push(item), complete: () => resolve(items), error: reject }),
  );
}

test.serial("StreamChat(agentId, message): start, a content item per provider delta, end with the whole reply", async (t) => {
  const agent = await spawn();
  fake.script.push({ kind: "reply", content: ["Hel", "lo ", "there"] });
  const connection = await connect(t, "/hubs/agent", KEYS.operator);
  const items = await streamOf<{ type: string; agentId: string; content: string }>(connection, "StreamChat", agent.id, "hi");
  t.deepEqual(
    items.map((i) => [i.type, i.content]),
    [
      ["start", ""],
      ["content", "Hel"],
      ["content", "lo "],
      ["content", "there"],
      ["end", "Hello there"],
    ],
  );
  t.true(items.every((i) => i.agentId === agent.id));

  const listed = (await connection.invoke("ListAgents")) as { id: string }[];
  t.true(listed.some((a) => a.id === agent.id));
});

test.serial(
  "a role too low for StreamChat completes with an error starting Forbidden; an unknown agent yields an error item",
  async (t) => {
    const agent = await spawn();
    const viewer = await connect(t, "/hubs/agent", KEYS.user, true);
    const err = await t.throwsAsync(streamOf(viewer, "StreamChat", agent.id, "hi"));
    t.regex(err!.message, /Forbidden/);
    // The user may still list.
    t.true(Array.isArray(await viewer.invoke("ListAgents")));

    const operator = await connect(t, "/hubs/agent", KEYS.operator);
    const items = await streamOf<{ type: string; content: string }>(operator, "StreamChat", "00000000-0000-4000-8000-000000000000", "hi");
    t.is(items.at(-1)?.type, "error", JSON.stringify(items));
    t.false(items.some((i) => i.type === "end"));
  },
);

test.serial("/hubs/events: StreamEvents with a filter, ActivityEvent and ChannelStatusChanged pushed to every client", async (t) => {
  const connection = await connect(t, "/hubs/events", KEYS.user);
  const activity: { eventType: string; sourceId: string }[] = [];
  const channelChanges: [string, boolean][] = [];
  connection.on("ActivityEvent", (event: { eventType: string; sourceId: string }) => activity.push(event));
  connection.on("ChannelStatusChanged", (channelType: string, isConnected: boolean) => channelChanges.push([channelType, isConnected]));
  const streamed: { eventType: string; sourceId: string; payload: Record<string, unknown> }[] = [];
  const subscription = connection.stream<(typeof streamed)[number]>("StreamEvents", "agent.*").subscribe({
    next: (item) => streamed.push(item),
    complete: () => {},
    error: () => {},
  });
  t.teardown(() => subscription.dispose());
  // The stream is open once the hub has a client; the first event may race it, so spawn until one arrives.
  let agent: { id: string } | undefined;
  await until(async () => {
    if (streamed.length === 0) agent = await spawn();
    return streamed.some((e) => e.sourceId === agent?.id);
  }, "an agent.spawned event on StreamEvents");
  await mesh.drainOutbox();
  const spawned = streamed.find((e) => e.sourceId === agent!.id)!;
  t.is(spawned.eventType, "agent.spawned");
  t.like(spawned.payload, { agentId: agent!.id, provider: "fake", model: "gpt-4o-mini" });

  const disconnect = await fetch(`${base}/api/channels/web/disconnect`, { method: "POST", headers: { "x-api-key": KEYS.operator } });
  t.is(disconnect.status, 200);
  await mesh.drainOutbox();
  await until(() => channelChanges.some(([type, on]) => type === "web" && !on), "ChannelStatusChanged(web, false)");
  await until(() => activity.some((e) => e.eventType === "channel.disconnected"), "ActivityEvent(channel.disconnected)");
  t.false(
    streamed.some((e) => e.eventType.startsWith("channel.")),
    "the agent.* filter kept channel events out",
  );
  await fetch(`${base}/api/channels/web/connect`, { method: "POST", headers: { "x-api-key": KEYS.operator } });
});

test.serial("plain GET /hubs/events: text/event-stream of every event; no key 401", async (t) => {
  t.is((await fetch(`${base}/hubs/events`)).status, 401);
  const received: { type: string; id: string; data: { eventType: string; sourceId: string } }[] = [];
  const source = new EventSource(`${base}/hubs/events`, {
    fetch: (url, init) => fetch(url, { ...init, headers: { ...(init?.headers ?? {}), "x-api-key": KEYS.user } }),
  });
  t.teardown(() => source.close());
  source.addEventListener("agent.spawned", (e) => received.push({ type: e.type, id: e.lastEventId, data: JSON.parse(e.data) }));
  await new Promise<void>((resolve, reject) => {
    source.onopen = () => resolve();
    source.onerror = (e) => reject(new Error(`event stream failed: ${e.message}`));
  });
  let agent: { id: string } | undefined;
  await until(async () => {
    if (received.length === 0) {
      agent = await spawn();
      await mesh.drainOutbox();
    }
    return received.some((e) => e.data.sourceId === agent?.id);
  }, "agent.spawned on the plain event stream");
  const event = received.find((e) => e.data.sourceId === agent!.id)!;
  t.is(event.data.eventType, "agent.spawned");
  t.regex(event.id, /^[0-9a-f-]{36}$/);
});
