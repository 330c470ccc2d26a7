// Server-streaming methods framed as NDJSON, and the framer extension point.
import test from "ava";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { Code, ConnectError } from "@connectrpc/connect";
import { startHarness, type Harness } from "../../test/support/gateway-harness.js";
import type { StreamFramer } from "./framer.js";

const upperFramer: StreamFramer = {
  mediaType: "text/x-test-stream",
  contentType: "text/x-test-stream",
  eagerHeaders: true,
  message: (json) => `MSG ${JSON.stringify(json)}\n`,
  error: (status) => `ERR ${status}\n`,
};

let h: Harness;
test.before(async () => {
  h = await startHarness({ streamFramers: [upperFramer] });
});
test.after.always(() => h?.close());

const lines = (text: string) =>
  text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as unknown);

test("each message is one JSON line, in the service's style", async (t) => {
  const res = await h.send("library", {
    method: "GET",
    path: "/v1/shelves/7:watch?limit=3",
    async *respond(input) {
      const { limit } = input as unknown as { limit: number };
      for (let i = 1; i <= limit; i++) yield { shelfId: 7n, sequence: i, note: i === 2 ? "two" : undefined };
    },
  });
  t.is(res.status, 200);
  t.is(res.headers["content-type"], "application/x-ndjson");
  t.truthy(res.headers["x-request-id"]);
  t.true(res.text.endsWith("\n"));
  t.deepEqual(lines(res.text), [
    { shelfId: "7", sequence: 1, note: null },
    { shelfId: "7", sequence: 2, note: "two" },
    { shelfId: "7", sequence: 3, note: null },
  ]);
  t.is(res.call?.rpc, "WatchShelf");
});

test("proto names and omitted unset fields for the other style", async (t) => {
  const res = await h.send("inventory", {
    method: "GET",
    path: "/inventory/items:stream",
    async *respond() {
      yield { id: "a", quantity: 1 };
      yield { id: "b", dimensions: { widthCm: 3 } };
    },
  });
  t.deepEqual(lines(res.text), [
    { id: "a", quantity: 1, tags: [] },
    { id: "b", quantity: 0, tags: [], dimensions: { width_cm: 3, height_cm: 0 } },
  ]);
});

test("an empty stream is a 200 with an empty body", async (t) => {
  const res = await h.send("library", { method: "GET", path: "/v1/shelves/7:watch" });
  t.is(res.status, 200);
  t.is(res.headers["content-type"], "application/x-ndjson");
  t.is(res.text, "");
});

test("a failure before the first message keeps its HTTP status", async (t) => {
  const res = await h.send("library", {
    method: "GET",
    path: "/v1/shelves/7:watch",
    // biome-ignore lint/correctness/useYield: a stream that fails before its first message
    async *respond() {
      throw new ConnectError("no such shelf", Code.NotFound);
    },
  });
  t.is(res.status, 404);
  t.is(res.headers["content-type"], "application/problem+json");
  t.like(res.json, { status: 404, detail: "no such shelf" });
});

test("a failure mid-stream becomes a last error line", async (t) => {
  const res = await h.send("inventory", {
    method: "GET",
    path: "/inventory/items:stream",
    async *respond() {
      yield { id: "a" };
      yield { id: "b" };
      throw new ConnectError("stream aborted by peer", Code.Aborted);
    },
  });
  t.is(res.status, 200);
  t.deepEqual(lines(res.text), [
    { id: "a", quantity: 0, tags: [] },
    { id: "b", quantity: 0, tags: [] },
    { error: { error: "ABORTED", message: "stream aborted by peer" } },
  ]);
});

test("a bad query is refused before the stream opens", async (t) => {
  const res = await h.send("library", { method: "GET", path: "/v1/shelves/7:watch?limit=many" });
  t.is(res.status, 400);
  t.is(res.call, undefined);
});

test("another framer is chosen by the Accept header", async (t) => {
  const res = await h.send("library", {
    method: "GET",
    path: "/v1/shelves/7:watch",
    headers: { accept: "text/x-test-stream" },
    async *respond() {
      yield { shelfId: 1n, sequence: 1 };
      throw new ConnectError("gone", Code.Unavailable);
    },
  });
  t.is(res.headers["content-type"], "text/x-test-stream");
  t.is(res.text, 'MSG {"shelfId":"1","sequence":1,"note":null}\nERR 503\n');
});

/** Opens a stream and resolves with the response once the first line is in. */
function openStream(port: number, path: string, requestId: string) {
  return new Promise<{ res: IncomingMessage; first: string; destroy: () => void }>((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, headers: { "x-request-id": requestId }, agent: false });
    req.on("error", reject);
    req.on("response", (res) => {
      res.once("data", (chunk: Buffer) => resolve({ res, first: chunk.toString(), destroy: () => req.destroy() }));
    });
    req.end();
  });
}

test("a client that goes away cancels the service's stream", async (t) => {
  let cancelled!: () => void;
  const isCancelled = new Promise<void>((r) => (cancelled = r));
  h.script("stream-disconnect", async function* (_input, ctx) {
    yield { shelfId: 1n, sequence: 1 };
    await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
    cancelled();
  });
  const stream = await openStream(h.port("library"), "/v1/shelves/1:watch", "stream-disconnect");
  t.is(JSON.parse(stream.first).sequence, 1);
  stream.destroy();
  await isCancelled;
  t.true(h.captured("stream-disconnect")!.signal.aborted);
});

test("closing a front ends its open streams", async (t) => {
  const own = await startHarness();
  own.script("stream-close", async function* (_input, ctx) {
    yield { shelfId: 1n, sequence: 1 };
    await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
  });
  const stream = await openStream(own.port("library"), "/v1/shelves/1:watch", "stream-close");
  const ended = new Promise<void>((resolve) => stream.res.on("close", resolve));
  await own.close();
  await ended;
  t.false(own.fronts.library.server.listening);
  t.true(own.captured("stream-close")!.signal.aborted);
});

test("closing a front ends a stream that has not sent anything yet", async (t) => {
  const own = await startHarness();
  let started!: () => void;
  const isStarted = new Promise<void>((r) => (started = r));
  own.script("idle-stream", async function* (_input, ctx) {
    started();
    await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
    yield* [];
  });
  const req = httpRequest({
    host: "127.0.0.1",
    port: own.port("library"),
    path: "/v1/shelves/1:watch",
    headers: { "x-request-id": "idle-stream" },
    agent: false,
  });
  req.on("error", () => undefined);
  req.on("response", (res) => res.resume());
  req.end();
  await isStarted;
  await own.close();
  t.true(own.captured("idle-stream")!.signal.aborted);
  req.destroy();
});
