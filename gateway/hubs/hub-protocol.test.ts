// The hub protocol on the wire, with a raw WebSocket client (ws) and plain HTTP: negotiate,
// handshake, a refused protocol, pings and the client timeout, cancel, tokens across instances,
// and the plain-GET event stream (eventsource, fetch).
import test from "ava";
import { randomBytes } from "node:crypto";
import { EventSource } from "eventsource";
import { create } from "@bufbuild/protobuf";
import { type HubClientCall, HubClientCallsSchema } from "../../gen/meshwork/api/v1/hubs_pb.js";
import { HubEventRunSchema } from "../../test/gen/meshwork/testing/v1/hubs_pb.js";
import { exchange } from "../../test/support/gateway-harness.js";
import {
  type HubHarness,
  type HubSocket as Socket,
  KEYS,
  newEvent,
  openHubSocket,
  roomActivity,
  startHubHarness,
} from "../../test/support/hub-harness.js";
import { until } from "../../test/support/until.js";

const RS = "\u001e";
const HANDSHAKE = `{"protocol":"json","version":1}${RS}`;

const sharedKey = randomBytes(32);
let h: HubHarness;
let twin: HubHarness;
let stranger: HubHarness;
let quick: HubHarness;
test.before(async () => {
  // h and twin share a token key: two instances over one database. stranger has its own.
  [h, twin, stranger, quick] = await Promise.all([
    startHubHarness({ key: sharedKey }),
    startHubHarness({ key: sharedKey }),
    startHubHarness(),
    startHubHarness({ hubs: { keepAliveSeconds: 0.2, clientTimeoutSeconds: 0.8, handshakeTimeoutSeconds: 0.5 } }),
  ]);
});
test.after.always(() => Promise.all([h, twin, stranger, quick].map((x) => x?.close())));

const open = openHubSocket;

async function negotiate(harness: HubHarness, query = "?negotiateVersion=1", key: string = KEYS.operator) {
  const res = await exchange(harness.port, "POST", `/hubs/chat/negotiate${query}`, key ? { "x-api-key": key } : {}, undefined);
  return res;
}

async function handshaken(harness: HubHarness, path: string, headers?: Record<string, string>): Promise<Socket> {
  const socket = await open(harness, path, headers);
  socket.ws.send(HANDSHAKE);
  await until(() => socket.records.length > 0, "the handshake answer");
  return socket;
}

test("negotiate v1 answers a connection id, a URL-safe token and WebSockets with the Text format", async (t) => {
  const res = await negotiate(h);
  t.is(res.status, 200);
  const body = res.json as Record<string, unknown>;
  t.is(body.negotiateVersion, 1);
  t.regex(String(body.connectionId), /^[A-Za-z0-9_-]{10,}$/);
  t.regex(String(body.connectionToken), /^[A-Za-z0-9._~-]+$/);
  t.not(body.connectionToken, body.connectionId);
  t.deepEqual(body.availableTransports, [{ transport: "WebSockets", transferFormats: ["Text"] }]);
  t.is(res.headers["cache-control"], "no-store");
});

test("negotiate v0 has no token: the connection id is what the client sends back", async (t) => {
  const res = await negotiate(h, "");
  t.is(res.status, 200);
  const body = res.json as Record<string, unknown>;
  t.is(body.negotiateVersion, undefined);
  t.is(body.connectionToken, undefined);
  const socket = await handshaken(h, `/hubs/chat?id=${body.connectionId}&api_key=${KEYS.user}`);
  t.deepEqual(socket.records[0], {});
  socket.ws.close();
});

test("negotiate: no key 401, a wrong method 405, an unknown hub 404", async (t) => {
  const noKey = await negotiate(h, "?negotiateVersion=1", "");
  t.is(noKey.status, 401);
  t.truthy((noKey.json as { message?: string }).message);
  const wrongKey = await negotiate(h, "?negotiateVersion=1", "wrong-key-0123456789");
  t.is(wrongKey.status, 401);
  const get = await exchange(h.port, "GET", "/hubs/chat/negotiate", { "x-api-key": KEYS.user }, undefined);
  t.is(get.status, 405);
  t.is(get.headers.allow, "POST");
  const unknown = await exchange(h.port, "POST", "/hubs/nope/negotiate", { "x-api-key": KEYS.user }, undefined);
  t.is(unknown.status, 404);
});

test("handshake: json version 1 is answered {} + 0x1E, and messages sent with it are served", async (t) => {
  const { connectionToken } = (await negotiate(h)).json as { connectionToken: string };
  const socket = await open(h, `/hubs/chat?id=${connectionToken}`, { "x-api-key": KEYS.user });
  // The handshake and an invocation in one frame.
  socket.ws.send(`${HANDSHAKE}{"type":1,"invocationId":"1","target":"ListRooms","arguments":["gen"]}${RS}`);
  await until(() => socket.records.length >= 2, "the handshake answer and the completion");
  t.deepEqual(socket.records[0], {});
  t.deepEqual(socket.records[1], { type: 3, invocationId: "1", result: [{ roomId: "r1", title: "general", memberCount: 3 }] });
  socket.ws.close();
});

test("handshake: another protocol gets a handshake error and the connection closes", async (t) => {
  const socket = await open(h, "/hubs/chat", { "x-api-key": KEYS.user });
  socket.ws.send(`{"protocol":"messagepack","version":1}${RS}`);
  await socket.closed;
  t.is(socket.records.length, 1);
  t.regex(String(socket.records[0]!.error), /messagepack/);
  t.is(socket.records[0]!.type, undefined);
});

test("stream invocation, cancel: items, then the rpc is aborted and no completion is sent", async (t) => {
  const socket = await handshaken(h, "/hubs/chat", { "x-api-key": KEYS.operator });
  socket.ws.send(`{"type":4,"invocationId":"s1","target":"StreamChat","arguments":["raw-cancel","hang"]}${RS}`);
  await until(() => socket.records.some((r) => r.invocationId === "s1"), "the first stream item");
  t.deepEqual(
    socket.records.find((r) => r.invocationId === "s1"),
    { type: 2, invocationId: "s1", item: { type: "start", roomId: "raw-cancel", content: "" } },
  );
  const call = h.calls.find((c) => c.rpc === "StreamChat" && (c.input as { roomId?: string }).roomId === "raw-cancel")!;
  socket.ws.send(`{"type":5,"invocationId":"s1"}${RS}`);
  await until(() => call.signal.aborted, "the service's abort");
  // A later invocation is still answered, and nothing more came for s1.
  socket.ws.send(`{"type":1,"invocationId":"2","target":"ListRooms","arguments":[]}${RS}`);
  await until(() => socket.records.some((r) => r.invocationId === "2"), "the next completion");
  t.deepEqual(
    socket.records.filter((r) => r.invocationId === "s1").map((r) => r.type),
    [2],
  );
  socket.ws.close();
});

test("an invocation without an id is run and not answered", async (t) => {
  const socket = await handshaken(h, "/hubs/chat", { "x-api-key": KEYS.operator, "x-request-id": "fire-and-forget" });
  socket.ws.send(
    `{"type":1,"target":"ListRooms","arguments":["fire"]}${RS}{"type":1,"invocationId":"after","target":"ListRooms","arguments":[]}${RS}`,
  );
  await until(() => socket.records.some((r) => r.invocationId === "after"), "the later completion");
  t.true(h.calls.some((c) => c.rpc === "ListRooms" && (c.input as { prefix?: string }).prefix === "fire"));
  t.is(socket.records.filter((r) => r.type === 3).length, 1);
  socket.ws.close();
});

test("the server pings a quiet connection, and closes one whose client falls silent", async (t) => {
  const socket = await handshaken(quick, "/hubs/chat", { "x-api-key": KEYS.user });
  // The push stream's first client call comes at once; the pings follow while nothing else is sent.
  await until(() => socket.records.filter((r) => r.type === 6).length >= 2, "two pings");
  const code = await socket.closed;
  t.is(code, 1000);
  const last = socket.records.at(-1)!;
  t.is(last.type, 7);
  t.regex(String(last.error), /timeout/i);
});

test("a client that pings is not timed out", async (t) => {
  const socket = await handshaken(quick, "/hubs/chat", { "x-api-key": KEYS.user });
  let closed = false;
  void socket.closed.then(() => (closed = true));
  const pinger = setInterval(() => socket.ws.send(`{"type":6}${RS}`), 100);
  try {
    // Three client timeouts' worth of pings.
    await until(() => socket.records.filter((r) => r.type === 6).length >= 12, "a dozen server pings");
    t.false(closed);
  } finally {
    clearInterval(pinger);
    socket.ws.close();
  }
});

test("a token negotiated on one instance opens a connection on another that shares the key", async (t) => {
  const { connectionToken, connectionId } = (await negotiate(h)).json as { connectionToken: string; connectionId: string };
  const socket = await handshaken(twin, `/hubs/chat?id=${connectionToken}`, { "x-api-key": KEYS.operator });
  t.deepEqual(socket.records[0], {});
  await until(
    () => twin.calls.some((c) => c.rpc === "WatchActivity" && c.headers.get("x-meshwork-hub-connection") === connectionId),
    "the push rpc with the negotiated id",
  );
  socket.ws.close();
  const refused = await t.throwsAsync(open(stranger, `/hubs/chat?id=${connectionToken}`, { "x-api-key": KEYS.operator }));
  t.is((refused as unknown as { status: number }).status, 404);
});

test("the WebSocket is refused: a forged token 404, no key 401, a non-hub path 404", async (t) => {
  const { connectionToken } = (await negotiate(h)).json as { connectionToken: string };
  const forged = `${connectionToken.slice(0, -2)}xx`;
  const e1 = await t.throwsAsync(open(h, `/hubs/chat?id=${forged}`, { "x-api-key": KEYS.user }));
  t.is((e1 as unknown as { status: number }).status, 404);
  const e2 = await t.throwsAsync(open(h, `/hubs/chat?id=${connectionToken}`));
  t.is((e2 as unknown as { status: number }).status, 401);
  const e3 = await t.throwsAsync(open(h, "/hubs/other", { "x-api-key": KEYS.user }));
  t.is((e3 as unknown as { status: number }).status, 404);
  // A token is bound to its hub.
  const e4 = await t.throwsAsync(open(h, `/hubs/events?id=${connectionToken}`, { "x-api-key": KEYS.user }));
  t.is((e4 as unknown as { status: number }).status, 404);
});

test("a binary frame or a malformed message closes the connection with an error", async (t) => {
  const binary = await handshaken(h, "/hubs/chat", { "x-api-key": KEYS.user });
  binary.ws.send(Buffer.from([1, 2, 3]));
  await binary.closed;
  t.like(binary.records.at(-1), { type: 7 });
  t.regex(String(binary.records.at(-1)!.error), /json/);
  const malformed = await handshaken(h, "/hubs/chat", { "x-api-key": KEYS.user });
  malformed.ws.send(`{"type":1,${RS}`);
  await malformed.closed;
  t.like(malformed.records.at(-1), { type: 7 });
});

test("the api_key query parameter never reaches a log", async (t) => {
  const secret = KEYS.operator;
  const res = await exchange(h.port, "POST", `/hubs/chat/negotiate?negotiateVersion=1&api_key=${secret}`, {}, undefined);
  t.is(res.status, 200);
  const socket = await handshaken(h, `/hubs/chat?api_key=${secret}`);
  socket.ws.close();
  t.false(JSON.stringify(h.logs).includes(secret));
});

test("plain GET of the events hub: text/event-stream with event, id and data", async (t) => {
  const received: { type: string; id: string; data: unknown }[] = [];
  const source = new EventSource(`${h.url}/hubs/events?api_key=${KEYS.user}`);
  t.teardown(() => source.close());
  const listener = (e: MessageEvent) => received.push({ type: e.type, id: e.lastEventId, data: JSON.parse(e.data) });
  source.addEventListener("agent.spawned", listener);
  source.addEventListener("channel.connected", listener);
  await new Promise<void>((resolve, reject) => {
    source.onopen = () => resolve();
    source.onerror = (e) => reject(new Error(String(e.message)));
  });
  await until(() => h.events.size > 0, "the event stream subscribed");
  const spawned = newEvent("agent.spawned", "a7", { agentId: "a7", provider: "p", model: "m" });
  h.events.publish(spawned);
  h.events.publish(newEvent("channel.connected", "web", { channelType: "web", isConnected: true }));
  await until(() => received.length === 2, "both events");
  t.is(received[0]!.type, "agent.spawned");
  t.is(received[0]!.id, spawned.id);
  t.like(received[0]!.data, {
    id: spawned.id,
    eventType: "agent.spawned",
    sourceId: "a7",
    payload: { agentId: "a7", provider: "p", model: "m" },
  });
  t.is(received[1]!.type, "channel.connected");
});

test("items_field: each event of a run is its own StreamItem; a HubClientCalls run calls the client methods in order", async (t) => {
  const socket = await handshaken(h, "/hubs/runs", { "x-api-key": KEYS.user });
  socket.ws.send(`{"type":4,"invocationId":"r1","target":"StreamEvents","arguments":[]}${RS}`);
  // Only a WebSocket's calls carry the connection header (the plain GET's stream does not).
  await until(
    () => h.activityRuns.size > 0 && h.calls.some((c) => c.rpc === "StreamEventRuns" && c.headers.has("x-meshwork-hub-connection")),
    "the run streams opened",
  );
  const [spawned, stopped] = [newEvent("agent.spawned", "a1"), newEvent("agent.stopped", "a1", { reason: "idle" })];
  h.eventRuns.publish(create(HubEventRunSchema, { events: [spawned!, stopped!] }));
  h.activityRuns.publish(
    create(HubClientCallsSchema, { calls: [roomActivity("r1", "general"), roomActivity("r2", "random")] as HubClientCall[] }),
  );
  const items = () => socket.records.filter((r) => r.type === 2);
  const calls = () => socket.records.filter((r) => r.type === 1);
  await until(() => items().length === 2 && calls().length === 2, "two items and two client calls");
  t.deepEqual(
    items().map((r) => [r.invocationId, (r.item as { id: string; eventType: string }).id, (r.item as { eventType: string }).eventType]),
    [
      ["r1", spawned!.id, "agent.spawned"],
      ["r1", stopped!.id, "agent.stopped"],
    ],
  );
  t.like(items()[1]!.item as object, { sourceId: "a1", payload: { reason: "idle" } });
  t.deepEqual(
    calls().map((r) => [r.target, r.arguments]),
    [
      ["RoomActivity", [{ roomId: "r1", title: "general", memberCount: 2 }]],
      ["RoomActivity", [{ roomId: "r2", title: "random", memberCount: 2 }]],
    ],
  );
  socket.ws.close();
});

test("items_field on the plain GET: each event of a run is its own frame", async (t) => {
  const received: { type: string; id: string; data: { sourceId: string } }[] = [];
  const source = new EventSource(`${h.url}/hubs/runs?api_key=${KEYS.user}`);
  t.teardown(() => source.close());
  const listener = (e: MessageEvent) => received.push({ type: e.type, id: e.lastEventId, data: JSON.parse(e.data) });
  source.addEventListener("agent.spawned", listener);
  source.addEventListener("agent.stopped", listener);
  await new Promise<void>((resolve, reject) => {
    source.onopen = () => resolve();
    source.onerror = (e) => reject(new Error(String(e.message)));
  });
  await until(
    // The plain GET's call: it carries no hub connection header.
    () => h.calls.some((c) => c.rpc === "StreamEventRuns" && !c.headers.has("x-meshwork-hub-connection") && !c.signal.aborted),
    "the run stream subscribed",
  );
  const [spawned, stopped] = [newEvent("agent.spawned", "g1"), newEvent("agent.stopped", "g1")];
  h.eventRuns.publish(create(HubEventRunSchema, { events: [spawned!, stopped!] }));
  await until(() => received.filter((r) => r.data.sourceId === "g1").length === 2, "both frames");
  t.deepEqual(
    received.filter((r) => r.data.sourceId === "g1").map((r) => [r.type, r.id]),
    [
      ["agent.spawned", spawned!.id],
      ["agent.stopped", stopped!.id],
    ],
  );
});

test("plain GET of the events hub: the key is checked before the stream opens; other methods 405", async (t) => {
  const noKey = await fetch(`${h.url}/hubs/events`);
  t.is(noKey.status, 401);
  t.regex(noKey.headers.get("content-type") ?? "", /json/);
  const withHeader = await fetch(`${h.url}/hubs/events`, { headers: { "X-API-Key": KEYS.user } });
  t.is(withHeader.status, 200);
  t.is(withHeader.headers.get("content-type"), "text/event-stream; charset=utf-8");
  await withHeader.body?.cancel();
  const post = await fetch(`${h.url}/hubs/events`, { method: "POST", headers: { "X-API-Key": KEYS.user } });
  t.is(post.status, 405);
  // A hub without an event stream is WebSocket only.
  const chat = await fetch(`${h.url}/hubs/chat`, { headers: { "X-API-Key": KEYS.user } });
  t.is(chat.status, 400);
});

test("closing the front ends its hub connections with a Close that allows reconnecting", async (t) => {
  const own = await startHubHarness();
  const socket = await handshaken(own, "/hubs/chat", { "x-api-key": KEYS.operator });
  socket.ws.send(`{"type":4,"invocationId":"s","target":"StreamChat","arguments":["closing","hang"]}${RS}`);
  await until(() => socket.records.some((r) => r.invocationId === "s"), "the stream open");
  const call = own.calls.find((c) => c.rpc === "StreamChat")!;
  await own.close();
  await socket.closed;
  t.deepEqual(socket.records.at(-1), { type: 7, allowReconnect: true });
  t.true(call.signal.aborted);
});

test("a socket that never sends its handshake is closed when the handshake timeout passes", async (t) => {
  const started = Date.now();
  const socket = await open(quick, "/hubs/chat", { "x-api-key": KEYS.user });
  t.is(await socket.closed, 1000);
  t.true(Date.now() - started >= 400, "not before the timeout");
  t.deepEqual(socket.records, []);
});
