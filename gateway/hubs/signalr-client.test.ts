// The hubs as the official client sees them: @microsoft/signalr over WebSockets (with and without
// negotiation) against the test ChatHubService, behind the real auth interceptor.
import test, { type ExecutionContext } from "ava";
import { HttpTransportType, type HubConnection, HubConnectionBuilder, LogLevel } from "@microsoft/signalr";
import { until } from "../../test/support/until.js";
import { type HubHarness, KEYS, newEvent, roomActivity, startHubHarness } from "../../test/support/hub-harness.js";

let h: HubHarness;
test.before(async () => {
  h = await startHubHarness();
});
test.after.always(() => h?.close());

interface Connect {
  readonly hub?: string;
  readonly key?: string;
  /** How the key travels: the X-API-Key header (default) or `?api_key=`. */
  readonly via?: "header" | "query";
  readonly skipNegotiation?: boolean;
  /** Sent as X-Request-Id, so the test finds the calls its connection made. */
  readonly requestId?: string;
}

function build(
  t: ExecutionContext,
  { hub = "/hubs/chat", key = KEYS.operator, via = "header", skipNegotiation = false, requestId }: Connect = {},
): HubConnection {
  const url = `${h.url}${hub}${via === "query" ? `?api_key=${encodeURIComponent(key)}` : ""}`;
  const connection = new HubConnectionBuilder()
    .withUrl(url, {
      transport: HttpTransportType.WebSockets,
      skipNegotiation,
      headers: { ...(via === "header" ? { "X-API-Key": key } : {}), ...(requestId ? { "X-Request-Id": requestId } : {}) },
    })
    .configureLogging(LogLevel.None)
    .build();
  t.teardown(() => connection.stop());
  return connection;
}

async function connect(t: ExecutionContext, options?: Connect): Promise<HubConnection> {
  const connection = build(t, options);
  await connection.start();
  return connection;
}

function collect<T>(connection: HubConnection, method: string, ...args: unknown[]) {
  const items: T[] = [];
  const done = new Promise<void>((resolve, reject) => {
    connection.stream<T>(method, ...args).subscribe({ next: (item) => items.push(item), complete: resolve, error: reject });
  });
  // Streams a test leaves open fail when their connection stops: not a test failure.
  done.catch(() => {});
  return { items, done };
}

test("a streaming hub method yields each message as a stream item, in the front's naming, then completes", async (t) => {
  const connection = await connect(t);
  const { items, done } = collect<Record<string, unknown>>(connection, "StreamChat", "r1", "hello there");
  await done;
  t.deepEqual(items, [
    { type: "start", roomId: "r1", content: "" },
    { type: "content", roomId: "r1", content: "hello" },
    { type: "content", roomId: "r1", content: "there" },
    { type: "end", roomId: "r1", content: "hello there", note: "done" },
  ]);
  const call = h.calls.findLast((c) => c.rpc === "StreamChat");
  t.is(call?.headers.get("x-api-key"), KEYS.operator);
  t.truthy(call?.headers.get("x-meshwork-hub-connection"), "the service learns the connection id");
});

test("arguments fill the request in the contract's order; method names match without regard to case", async (t) => {
  const connection = await connect(t, { via: "query" });
  const { items, done } = collect<Record<string, unknown>>(connection, "streamchat", "r7", "again", 2);
  await done;
  t.deepEqual(
    items.filter((i) => i.type === "content").map((i) => i.content),
    ["again", "again"],
  );
  const call = h.calls.findLast((c) => c.rpc === "StreamChat");
  t.like(call?.input, { roomId: "r7", message: "again", repeat: 2 });
  t.is(call?.headers.get("x-api-key"), KEYS.operator, "?api_key= reaches the service as the key header");
});

test("a role too low for the method completes the stream with an error starting Forbidden", async (t) => {
  const connection = await connect(t, { key: KEYS.user });
  const error = await t.throwsAsync(collect(connection, "StreamChat", "r1", "hi").done);
  t.regex(error!.message, /^Forbidden/);
  t.regex(error!.message, /Operator/);
  // The connection stays usable.
  t.deepEqual(await connection.invoke("ListRooms", "gen"), [{ roomId: "r1", title: "general", memberCount: 3 }]);
});

test("a failing rpc completes with its status phrase; a server fault hides its detail", async (t) => {
  const connection = await connect(t);
  const missing = await t.throwsAsync(collect(connection, "StreamChat", "missing", "hi").done);
  t.regex(missing!.message, /Not Found: room missing does not exist/);
  const broken = await t.throwsAsync(collect(connection, "StreamChat", "broken", "hi").done);
  t.regex(broken!.message, /Internal Server Error/);
  t.notRegex(broken!.message, /hunter2/);
  t.true(h.logs.some((l) => l.level === "error" && l.msg === "hub call failed"));
});

test("a unary hub method is an invocation whose completion carries the result field", async (t) => {
  const connection = await connect(t, { key: KEYS.user });
  t.deepEqual(await connection.invoke("ListRooms"), [
    { roomId: "r1", title: "general", memberCount: 3 },
    { roomId: "r2", title: "random", memberCount: 0 },
  ]);
  t.deepEqual(await connection.invoke("ListRooms", "ran"), [{ roomId: "r2", title: "random", memberCount: 0 }]);
});

test("unknown methods, wrong invocation kinds and bad arguments complete with errors", async (t) => {
  const connection = await connect(t);
  t.regex((await t.throwsAsync(connection.invoke("Nope")))!.message, /Unknown hub method 'Nope'/);
  t.regex(
    (await t.throwsAsync(connection.invoke("StreamChat", "r1", "x")))!.message,
    /streaming 'StreamChat' method with a non-streaming invocation/,
  );
  t.regex(
    (await t.throwsAsync(collect(connection, "ListRooms").done))!.message,
    /non-streaming 'ListRooms' method with a streaming invocation/,
  );
  t.regex((await t.throwsAsync(collect(connection, "StreamChat", "r1", "x", "many").done))!.message, /argument 3 \(repeat\)/);
  t.regex(
    (await t.throwsAsync(collect(connection, "StreamChat", "r1", "x", 1, 2).done))!.message,
    /provides 4 argument\(s\) but target expects 3/,
  );
});

test("cancelling a stream (disposing the subscription) aborts the rpc in the service", async (t) => {
  const connection = await connect(t);
  const items: unknown[] = [];
  const subscription = connection
    .stream("StreamChat", "r9", "hang")
    .subscribe({ next: (i) => items.push(i), complete: () => {}, error: () => {} });
  await until(() => items.length === 1, "the stream's first item");
  const call = h.calls.findLast((c) => c.rpc === "StreamChat" && (c.input as { roomId?: string }).roomId === "r9")!;
  t.false(call.signal.aborted);
  subscription.dispose();
  await until(() => call.signal.aborted, "the service's abort signal");
  // The connection goes on.
  t.is((await connection.invoke<unknown[]>("ListRooms")).length, 2);
});

test("push streams: every connection gets the client calls its hub's push rpc yields", async (t) => {
  const connection = build(t);
  const statuses: unknown[][] = [];
  const rooms: unknown[] = [];
  connection.on("ChannelStatusChanged", (...args: unknown[]) => statuses.push(args));
  connection.on("RoomActivity", (room: unknown) => rooms.push(room));
  await connection.start();
  await until(() => statuses.length === 1, "ChannelStatusChanged");
  t.deepEqual(statuses[0], ["web", true]);
  const push = h.calls.find((c) => c.rpc === "WatchActivity" && c.headers.get("x-meshwork-hub-connection") === connection.connectionId);
  t.truthy(push, "the push rpc was opened for this connection");
  t.is(push!.headers.get("x-api-key"), KEYS.operator, "with the connection's key");
  await until(() => h.activity.size > 0, "the push stream subscribed");
  h.activity.publish(roomActivity("r3", "news"));
  await until(() => rooms.some((r) => (r as { roomId: string }).roomId === "r3"), "RoomActivity");
  t.deepEqual(rooms.at(-1), { roomId: "r3", title: "news", memberCount: 2 });
  await connection.stop();
  await until(() => push!.signal.aborted, "the push stream closed with its connection");
});

test("skipNegotiation: the WebSocket opens without a negotiate", async (t) => {
  const requestId = "skip-negotiation-1";
  const connection = await connect(t, { skipNegotiation: true, via: "query", requestId });
  const { items, done } = collect(connection, "StreamChat", "r1", "skip");
  await done;
  t.is(items.length, 3);
  // One admission (the WebSocket itself, asking for a new connection), no negotiate before it.
  const admissions = h.calls.filter((c) => c.rpc === "Connect" && c.headers.get("x-request-id") === requestId);
  t.is(admissions.length, 1);
  t.is((admissions[0]!.input as { connectionToken?: string }).connectionToken, "");
});

test("the events hub streams StreamEvents with an optional filter", async (t) => {
  const connection = await connect(t, { hub: "/hubs/events", key: KEYS.user });
  const all = collect<Record<string, unknown>>(connection, "StreamEvents");
  const agents = collect<Record<string, unknown>>(connection, "StreamEvents", "agent.*");
  await until(
    () => h.calls.filter((c) => c.rpc === "StreamEvents" && !c.signal.aborted).length >= 2 && h.events.size >= 2,
    "both streams open",
  );
  h.events.publish(newEvent("channel.connected", "web", { channelType: "web", isConnected: true }));
  h.events.publish(newEvent("agent.spawned", "a1", { agentId: "a1" }));
  await until(() => all.items.length === 2 && agents.items.length === 1, "the events");
  t.deepEqual(
    all.items.map((e) => e.eventType),
    ["channel.connected", "agent.spawned"],
  );
  t.like(agents.items[0], { eventType: "agent.spawned", sourceId: "a1", payload: { agentId: "a1" } });
  t.regex(String(agents.items[0]!.timestamp), /^\d{4}-\d\d-\d\dT/);
});

test("no key: negotiate is refused with 401 and the client does not connect", async (t) => {
  const connection = new HubConnectionBuilder()
    .withUrl(`${h.url}/hubs/chat`, { transport: HttpTransportType.WebSockets })
    .configureLogging(LogLevel.None)
    .build();
  const error = await t.throwsAsync(connection.start());
  t.regex(error!.message, /401/);
  const skipping = build(t, { key: "not-a-key-at-all", skipNegotiation: true });
  await t.throwsAsync(skipping.start());
});
