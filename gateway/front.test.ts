// Front-level behaviour: X-Request-Id, header forwarding, request logs, start-up checks,
// cancellation on disconnect and a pino logger plugged in as it is.
import test from "ava";
import { Agent, request as httpRequest } from "node:http";
import { setTimeout as delay } from "node:timers/promises";
import { pino } from "pino";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { ErrorStyle, JsonNaming } from "../gen/meshwork/api/v1/options_pb.js";
import { toJson } from "@bufbuild/protobuf";
import {
  ArchiveBookRequestSchema,
  InventoryService,
  LibraryService,
  type ArchiveBookRequest,
} from "../test/gen/meshwork/testing/v1/transcoding_pb.js";
import { createFront, RouteConflictError, type GatewayLogger } from "./index.js";
import { captureLogger, exchange, startHarness, type Harness, type LogEntry } from "../test/support/gateway-harness.js";
import { until } from "../test/support/until.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let h: Harness;
test.before(async () => {
  h = await startHarness({
    forwardHeaders: (req, out) => {
      const tenant = req.headers["x-tenant"];
      if (typeof tenant === "string") out["x-tenant"] = tenant;
    },
  });
});
test.after.always(() => h?.close());

const idCases: [name: string, sent: string | undefined, echoed: "same" | "new"][] = [
  ["a sane id is echoed", "req-42.abc_DEF:1", "same"],
  ["128 visible characters are sane", "x".repeat(128), "same"],
  ["no id gets a fresh uuid", undefined, "new"],
  ["an over-long id is replaced", "x".repeat(129), "new"],
  ["an id with spaces is replaced", "a b", "new"],
  ["an empty id is replaced", "", "new"],
];

for (const [name, sent, echoed] of idCases) {
  test(`X-Request-Id: ${name}, and the service gets the same`, async (t) => {
    const res = await h.send("library", {
      method: "GET",
      path: "/v1/books/b1",
      noRequestId: sent === undefined,
      headers: sent === undefined ? {} : { "x-request-id": sent },
    });
    t.is(res.status, 200);
    const id = res.headers["x-request-id"] as string;
    if (echoed === "same") t.is(id, sent ?? "");
    else t.regex(id, UUID);
    t.is(res.call?.headers.get("x-request-id"), id);
  });
}

const everyResponse: [name: string, method: string, path: string, status: number][] = [
  ["404", "GET", "/nope", 404],
  ["405", "PUT", "/v1/books", 405],
  ["400", "GET", "/v1/shelves/x/books", 400],
  ["204", "DELETE", "/v1/shelves/1/books/2", 204],
];
for (const [name, method, path, status] of everyResponse) {
  test(`X-Request-Id is on a ${name}`, async (t) => {
    const res = await h.send("library", { method, path, noRequestId: true });
    t.is(res.status, status);
    t.regex(res.headers["x-request-id"] as string, UUID);
  });
}

test("trace context, credentials and hooked headers reach the service; others do not", async (t) => {
  const res = await h.send("library", {
    method: "GET",
    path: "/v1/books/b1",
    headers: {
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      tracestate: "vendor=1",
      authorization: "Bearer t0ken",
      "x-api-key": "k1",
      "x-tenant": "acme",
      cookie: "session=1",
    },
  });
  const got = res.call!.headers;
  t.is(got.get("traceparent"), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  t.is(got.get("tracestate"), "vendor=1");
  t.is(got.get("authorization"), "Bearer t0ken");
  t.is(got.get("x-api-key"), "k1");
  t.is(got.get("x-tenant"), "acme");
  t.is(got.get("cookie"), null);
});

test("each request is logged once, at info below 500 and error from 500, without the query", async (t) => {
  const ok = await h.send("library", { method: "GET", path: "/v1/shelves/1/books?pageToken=secret" });
  const broken = await h.send("library", {
    method: "GET",
    path: "/v1/books/b1",
    respond: () => {
      throw new ConnectError("disk on fire", Code.Internal);
    },
  });
  const entryOf = (id: unknown) => h.logs.filter((l: LogEntry) => l.obj.requestId === id);
  const [okLog, ...moreOk] = entryOf(ok.headers["x-request-id"]);
  t.is(moreOk.length, 0);
  t.is(okLog?.level, "info");
  t.like(okLog?.obj, { method: "GET", path: "/v1/shelves/1/books", status: 200, rpc: "meshwork.testing.v1.LibraryService.ListBooks" });
  t.is(typeof okLog?.obj.durationMs, "number");
  const [badLog] = entryOf(broken.headers["x-request-id"]);
  t.is(badLog?.level, "error");
  t.is(badLog?.obj.status, 500);
  t.regex(String(badLog?.obj.err), /disk on fire/);
  t.false(broken.text.includes("disk on fire"));
});

test("a client that disconnects cancels the call", async (t) => {
  let started!: () => void;
  const isStarted = new Promise<void>((r) => (started = r));
  let cancelled!: () => void;
  const isCancelled = new Promise<void>((r) => (cancelled = r));
  h.script("disconnecting-client", (_input, ctx) => {
    started();
    return new Promise((_resolve, reject) => {
      ctx.signal.addEventListener("abort", () => {
        cancelled();
        reject(ctx.signal.reason);
      });
    });
  });
  const req = httpRequest({
    host: "127.0.0.1",
    port: h.port("library"),
    path: "/v1/books/slow",
    headers: { "x-request-id": "disconnecting-client" },
    agent: false,
  });
  req.on("error", () => undefined);
  req.end();
  await isStarted;
  req.destroy();
  await isCancelled;
  t.true(h.captured("disconnecting-client")!.signal.aborted);
  // The gateway logs the exchange as closed by the client once the call unwinds.
  const entry = await until(() => h.logs.find((l) => l.obj.requestId === "disconnecting-client"), "the exchange's log line");
  t.is(entry.obj.status, 499);
  t.is(entry.level, "info");
});

test("requests on a kept-alive connection are not cancelled by the ones it finished before", async (t) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const sockets = new Set<unknown>();
  const get = (id: string) =>
    new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: "127.0.0.1", port: h.port("library"), path: "/v1/books/b1", headers: { "x-request-id": id }, agent });
      req.on("socket", (socket) => sockets.add(socket));
      req.on("response", (res) => res.resume().on("end", () => resolve(res.statusCode!)));
      req.on("error", reject);
      req.end();
    });
  const abortedDuring: boolean[] = [];
  for (const id of ["kept-alive-1", "kept-alive-2", "kept-alive-3"]) {
    h.script(id, async (_input, ctx) => {
      await delay(20);
      abortedDuring.push(ctx.signal.aborted);
      return { name: "shelves/1/books/b1" };
    });
    t.is(await get(id), 200);
  }
  t.is(sockets.size, 1, "one connection carried all three");
  t.deepEqual(abortedDuring, [false, false, false]);
});

test("services with conflicting rules fail at construction", (t) => {
  const err = t.throws(() =>
    createFront({
      name: "dup",
      host: "127.0.0.1",
      port: 0,
      services: [LibraryService, LibraryService],
      transport: createRouterTransport(() => undefined),
      logger: captureLogger([]),
    }),
  );
  t.true(err instanceof RouteConflictError);
  t.regex(err.message, /LibraryService\.GetBook/);
});

test("a front of mixed styles uses problem+json for its own 404 unless told otherwise", async (t) => {
  const transport = createRouterTransport(() => undefined);
  const base = { host: "127.0.0.1", port: 0, services: [LibraryService, InventoryService], transport, logger: captureLogger([]) };
  const mixed = createFront({ ...base, name: "mixed" });
  const told = createFront({
    ...base,
    name: "told",
    defaultStyle: { errorStyle: ErrorStyle.ERROR_MESSAGE, jsonNaming: JsonNaming.PROTO_NAME },
  });
  try {
    const mixedPort = (await mixed.listen()).port;
    const a = await exchange(mixedPort, "GET", "/nope", {}, undefined);
    const b = await exchange((await told.listen()).port, "GET", "/nope", {}, undefined);
    t.is(a.headers["content-type"], "application/problem+json");
    t.is(b.headers["content-type"], "application/json");
    t.deepEqual(b.json, { error: "NOT_FOUND", message: "No operation matches this path." });
    // Once a method is known, its service's own style wins.
    const c = await exchange(mixedPort, "PUT", "/inventory/items", {}, undefined);
    t.deepEqual(Object.keys(c.json as object).sort(), ["error", "message"]);
  } finally {
    await Promise.all([mixed.close(), told.close()]);
  }
});

test("a pino logger plugs in as it is", async (t) => {
  const logger: GatewayLogger = pino({ level: "silent" });
  const front = createFront({
    name: "pino",
    host: "127.0.0.1",
    port: 0,
    services: [InventoryService],
    transport: createRouterTransport((r) => r.service(InventoryService, {})),
    logger,
  });
  try {
    const { port } = await front.listen();
    t.true(port > 0);
    const res = await exchange(port, "GET", "/inventory/items/1", {}, undefined);
    t.is(res.status, 501);
    t.deepEqual(res.json, { error: "UNIMPLEMENTED", message: "This operation is not implemented." });
  } finally {
    await front.close();
  }
});

test("the asset contract compiles and answers the documented shapes", async (t) => {
  const { AssetService } = await import("../gen/tracking/v1/asset_pb.js");
  const front = createFront({
    name: "tracking",
    host: "127.0.0.1",
    port: 0,
    services: [AssetService],
    transport: createRouterTransport((r) =>
      r.service(AssetService, {
        listAssets: () => ({ items: [{ id: "a1", name: "Van" }] }),
        createAsset: (req) => ({ id: "a2", name: req.asset?.name, speedThresholdKmh: req.asset?.speedThresholdKmh }),
      }),
    ),
    logger: captureLogger([]),
  });
  try {
    const { port } = await front.listen();
    const list = await exchange(port, "GET", "/api/assets", {}, undefined);
    t.deepEqual(list.json, [
      { id: "a1", name: "Van", description: null, category: null, speedThresholdKmh: null, createdAt: null, updatedAt: null },
    ]);
    const body = Buffer.from(JSON.stringify({ name: "Crate", speedThresholdKmh: 80 }));
    const created = await exchange(port, "POST", "/api/assets", { "content-type": "application/json" }, body);
    t.like(created.json, { id: "a2", name: "Crate", speedThresholdKmh: 80, description: null });
    const unknown = await exchange(
      port,
      "POST",
      "/api/assets",
      { "content-type": "application/json" },
      Buffer.from('{"name":"x","colour":"red"}'),
    );
    t.is(unknown.status, 400);
    t.deepEqual((unknown.json as { errors: unknown }).errors, { colour: ["unknown property"] });
  } finally {
    await front.close();
  }
});

test("body_optional: no body or an empty one reads as {}; a body sent is still checked; methods without the option still need one", async (t) => {
  const path = "/v1/shelves/1/books/2:archive";
  for (const extra of [{}, { rawBody: "", headers: { "content-type": "application/json" } }, { rawBody: "" }]) {
    const res = await h.send("library", { method: "POST", path, ...extra });
    t.is(res.status, 200, res.text);
    t.is(res.call?.rpc, "ArchiveBook");
    t.deepEqual(toJson(ArchiveBookRequestSchema, res.call!.input as ArchiveBookRequest), { name: "shelves/1/books/2" });
  }
  const withReason = await h.send("library", { method: "POST", path, body: { reason: "old" } });
  t.is((withReason.call!.input as ArchiveBookRequest).reason, "old");
  t.is((await h.send("library", { method: "POST", path, body: { colour: "red" } })).status, 400, "unknown properties still refused");
  t.is((await h.send("library", { method: "POST", path, rawBody: "{", headers: { "content-type": "application/json" } })).status, 400);
  t.is((await h.send("library", { method: "POST", path, rawBody: "reason=x", headers: { "content-type": "text/plain" } })).status, 415);
  const required = await h.send("library", { method: "POST", path: "/v1/shelves/1/books" });
  t.is(required.status, 400);
  t.regex(required.text, /body is required/);
});
