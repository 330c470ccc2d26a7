// Chat channels through the agent front's REST, end to end: the built-in web channel, idempotent
// connect and disconnect with events on the AGENTS stream only on a change, sending (202, 409 when
// disconnected), 404 for a type no adapter serves, the audit entries, and two meshes on one
// PostgreSQL + NATS sharing one channel state.
import { fromBinary } from "@bufbuild/protobuf";
import test, { type ExecutionContext } from "ava";
import { ChannelConnectedSchema, ChannelDisconnectedSchema } from "../../../gen/agents/v1/events_pb.js";
import { watchStream, type EventWatch, type SeenEvent } from "../../../test/support/event-watch.js";
import { realServers } from "../../../test/support/real-infra.js";
import { sendJson } from "../../../test/support/rest.js";
import { startTestMesh, type TestMesh } from "../../../test/support/start-mesh.js";
import { until } from "../../../test/support/until.js";
import { createLogger } from "../../runtime/logging/index.js";
import { startTelemetry } from "../../runtime/telemetry/index.js";

interface ErrorBody {
  error: string;
  message: string;
}

interface AuditPage {
  totalCount: number;
  count: number;
  events: { action: string; resource: string | null; severity: string; detail: Record<string, unknown>; userId: string | null }[];
}

let mesh: TestMesh;
let api: string;
let telemetry: Awaited<ReturnType<typeof startTelemetry>> | undefined;
test.before(async () => {
  // A tracer provider, so a request's traceparent gives its handler an active span.
  telemetry = await startTelemetry({ serviceName: "channels-test", exporter: "none", env: {}, logger: createLogger({ level: "silent" }) });
  mesh = await startTestMesh();
  api = `${mesh.frontUrl("agents")}/api`;
});
test.after.always(async () => {
  await mesh?.close();
  await telemetry?.shutdown();
});

/** GET /api/channels with nothing but web configured: every platform, web in the given state. */
function listing(webConnected: boolean) {
  return [
    { channelType: "discord", displayName: "Discord", isConnected: false, configured: false },
    { channelType: "signal", displayName: "Signal", isConnected: false, configured: false },
    { channelType: "slack", displayName: "Slack", isConnected: false, configured: false },
    { channelType: "telegram", displayName: "Telegram", isConnected: false, configured: false },
    { channelType: "web", displayName: "Web", isConnected: webConnected, configured: true },
  ];
}

/** A channel event as seen on the bus: which way and for which channel. */
function decoded(event: SeenEvent): string {
  if (event.subject === "agents.v1.channel.connected") return `connected ${fromBinary(ChannelConnectedSchema, event.data).channelType}`;
  if (event.subject === "agents.v1.channel.disconnected")
    return `disconnected ${fromBinary(ChannelDisconnectedSchema, event.data).channelType}`;
  return event.subject;
}

async function watchChannels(t: ExecutionContext, on: TestMesh): Promise<EventWatch<SeenEvent>> {
  const watch = await watchStream(on, "agents.v1.channel.>", "AGENTS");
  t.teardown(() => watch.stop());
  return watch;
}

test.serial("GET /api/channels lists every platform with configured; web is connected at start; also under /api/v1", async (t) => {
  for (const path of ["/api/channels", "/api/v1/channels"]) {
    const res = await sendJson(`${mesh.frontUrl("agents")}${path}`, "GET");
    t.is(res.status, 200, path);
    t.regex(res.type, /application\/json/);
    t.deepEqual(res.body, listing(true), path);
  }
});

test.serial("connecting a channel whose credentials are unset is 400 naming the setting; its state stays", async (t) => {
  const expected: Record<string, string> = {
    telegram: "Channels:Telegram:BotToken",
    signal: "Channels:Signal:BaseUrl",
    slack: "Channels:Slack:BotToken",
    discord: "Channels:Discord:BotToken",
  };
  for (const [type, setting] of Object.entries(expected)) {
    const res = await sendJson<ErrorBody>(`${api}/channels/${type}/connect`, "POST");
    t.is(res.status, 400, type);
    t.true(res.body.message.includes(setting), `${type}: ${res.body.message}`);
  }
  t.deepEqual((await sendJson(`${api}/channels`, "GET")).body, listing(true));
  const page = await sendJson<AuditPage>(`${api}/audit/events?resource=telegram&action=channel.connect`, "GET");
  t.is(page.body.events[0]?.detail.missingSetting, "Channels:Telegram:BotToken");
});

test.serial("connect and disconnect are idempotent and publish an event only on a change", async (t) => {
  const watch = await watchChannels(t, mesh);

  const again = await sendJson(`${api}/channels/web/connect`, "POST");
  t.is(again.status, 200);
  t.deepEqual(again.body, { channelType: "web", isConnected: true }, "already connected: same answer");

  const off = await sendJson(`${api}/channels/web/disconnect`, "POST");
  t.is(off.status, 200);
  t.deepEqual(off.body, { channelType: "web", isConnected: false });
  const offAgain = await sendJson(`${api}/v1/channels/web/disconnect`, "POST", {});
  t.deepEqual(offAgain.body, { channelType: "web", isConnected: false }, "a body is ignored; /api/v1 too");
  t.deepEqual((await sendJson(`${api}/channels`, "GET")).body, listing(false));

  const on = await sendJson(`${api}/channels/WEB/connect`, "POST");
  t.deepEqual(on.body, { channelType: "web", isConnected: true }, "the type is case-insensitive");
  t.deepEqual((await sendJson(`${api}/channels/web/connect`, "POST")).body, { channelType: "web", isConnected: true });
  // A last change as a sentinel: once it is seen, every event the calls above caused has been too.
  await sendJson(`${api}/channels/web/disconnect`, "POST");
  await mesh.drainOutbox();
  await until(() => watch.seen.length >= 3, "three channel events");
  t.deepEqual(watch.seen.map(decoded), ["disconnected web", "connected web", "disconnected web"]);
  t.true(
    watch.seen.every((e) => typeof e.msgId === "string" && e.msgId.length > 0),
    "each event carries its id",
  );

  await sendJson(`${api}/channels/web/connect`, "POST");
});

test.serial("connect and disconnect are audited, changed or not", async (t) => {
  const page = await sendJson<AuditPage>(`${api}/audit/events?resource=web&limit=1000`, "GET");
  t.is(page.status, 200);
  const actions = page.body.events.map((e) => `${e.action} ${e.detail.changed}`).reverse();
  t.deepEqual(actions, [
    "channel.connect false",
    "channel.disconnect true",
    "channel.disconnect false",
    "channel.connect true",
    "channel.connect false",
    "channel.disconnect true",
    "channel.connect true",
  ]);
  for (const event of page.body.events) {
    t.is(event.severity, "info");
    t.is(event.userId, null, "auth is off: no key, no user");
  }
});

test.serial("a channel change is audited with the trace id of the request that made it", async (t) => {
  const traceId = "0af7651916cd43dd8448eb211c80319c";
  await sendJson(`${api}/channels/web/connect`, "POST", undefined, { traceparent: `00-${traceId}-b7ad6b7169203331-01` });
  const [newest] = (await sendJson<AuditPage & { events: { traceId: string | null }[] }>(`${api}/audit/events?limit=1`, "GET")).body.events;
  t.like(newest, { action: "channel.connect", resource: "web", traceId });
});

test.serial("send: 202 with the message id, delivered to the web channel; 409 when disconnected", async (t) => {
  const sent = await sendJson<{ channelType: string; conversationId: string; messageId: string }>(`${api}/channels/web/send`, "POST", {
    conversationId: "room-1",
    content: "hello from the gateway",
  });
  t.is(sent.status, 202);
  t.is(sent.body.channelType, "web");
  t.is(sent.body.conversationId, "room-1");
  t.regex(sent.body.messageId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  const v1 = await sendJson(`${api}/v1/channels/web/send`, "POST", { conversationId: "room-1", content: "second" });
  t.is(v1.status, 202);

  const rows = await mesh
    .db!.em()
    .getConnection()
    .execute<{ id: string; content: string }[]>(
      `select "id", "content" from "agents_channel_message" where "channel_type" = 'web' and "conversation_id" = 'room-1' order by "created_at", "id"`,
    );
  t.true(
    rows.some((r) => r.id === sent.body.messageId && r.content === "hello from the gateway"),
    "the message is in the web inbox",
  );
  t.is(rows.length, 2);

  await sendJson(`${api}/channels/web/disconnect`, "POST");
  t.teardown(() => sendJson(`${api}/channels/web/connect`, "POST"));
  const refused = await sendJson<ErrorBody>(`${api}/channels/web/send`, "POST", { conversationId: "room-1", content: "lost" });
  t.is(refused.status, 409);
  t.regex(refused.body.message, /web.*not connected/);
});

test.serial("send refuses a missing or blank conversationId or content and unknown properties with 400", async (t) => {
  const cases: [unknown, RegExp][] = [
    [{ content: "x" }, /conversationId/],
    [{ conversationId: "c" }, /content/],
    [{ conversationId: "  ", content: "x" }, /conversationId/],
    [{ conversationId: "c", content: " \n" }, /content/],
    [{ conversationId: "c", content: "x", colour: "red" }, /colour/],
    [{ conversationId: 5, content: "x" }, /conversationId/],
  ];
  for (const [body, named] of cases) {
    const res = await sendJson<ErrorBody>(`${api}/channels/web/send`, "POST", body);
    t.is(res.status, 400, JSON.stringify(body));
    t.regex(res.body.message, named, JSON.stringify(body));
  }
  const noBody = await sendJson<ErrorBody>(`${api}/channels/web/send`, "POST");
  t.is(noBody.status, 400);
});

test.serial("a channel type no adapter serves is 404 on every operation", async (t) => {
  for (const op of ["connect", "disconnect"]) {
    const res = await sendJson<ErrorBody>(`${api}/channels/carrier-pigeon/${op}`, "POST");
    t.is(res.status, 404, op);
    t.regex(res.body.message, /carrier-pigeon/);
  }
  const send = await sendJson<ErrorBody>(`${api}/channels/carrier-pigeon/send`, "POST", { conversationId: "c", content: "x" });
  t.is(send.status, 404);
  t.deepEqual((await sendJson(`${api}/channels`, "GET")).body, listing(true));
});

if (realServers(test, "channels on two meshes sharing PostgreSQL and NATS", ["postgres", "nats"])) {
  test.serial("two meshes on one PostgreSQL + NATS share one channel state and publish one event per change", async (t) => {
    const a = await startTestMesh();
    // B shares A's database (A drops it at close, so B closes first).
    const b = await startTestMesh({ databaseUrl: a.config.runtime.database.url });
    t.teardown(async () => {
      await b.close();
      await a.close();
    });
    const at = (m: TestMesh) => `${m.frontUrl("agents")}/api`;
    const watch = await watchChannels(t, b);

    t.deepEqual((await sendJson(`${at(b)}/channels`, "GET")).body, listing(true));
    await sendJson(`${at(a)}/channels/web/disconnect`, "POST");
    t.deepEqual((await sendJson(`${at(b)}/channels`, "GET")).body, listing(false));
    const refused = await sendJson(`${at(b)}/channels/web/send`, "POST", { conversationId: "c", content: "x" });
    t.is(refused.status, 409, "B sees A's disconnect");

    // Both connect at once, several times: one change, one event.
    const answers = await Promise.all([a, b, a, b, a, b].map((m) => sendJson(`${at(m)}/channels/web/connect`, "POST")));
    t.true(answers.every((r) => r.status === 200));
    await sendJson(`${at(b)}/channels/web/disconnect`, "POST");
    await Promise.all([a.drainOutbox(), b.drainOutbox()]);
    await until(() => watch.seen.length >= 3, "three channel events");
    t.deepEqual(watch.seen.map(decoded), ["disconnected web", "connected web", "disconnected web"]);

    const audit = await sendJson<AuditPage>(`${at(a)}/audit/events?action=channel.connect`, "GET");
    t.is(audit.body.totalCount, 6, "B's connects are in A's view of the ring");
    t.is(audit.body.events.filter((e) => e.detail.changed === true).length, 1);
  });
}
