// Server-streaming methods answering meshwork.api.v1.ServerSentEvent, framed as text/event-stream:
// frame syntax, data rendered in the service's REST style, status before the first frame,
// keep-alives, cancellation, and the frame cache shared by clients.
import test from "ava";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { create, createRegistry, type Registry } from "@bufbuild/protobuf";
import { anyPack, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { ServerSentEventSchema } from "../../gen/meshwork/api/v1/sse_pb.js";
import { BookSchema, ItemSchema, LibraryService } from "../../test/gen/meshwork/testing/v1/transcoding_pb.js";
import { serviceStyleOf } from "../style.js";
import { startHarness, type Harness } from "../../test/support/gateway-harness.js";
import { createSseFramer } from "./sse-framer.js";
import { until } from "../../test/support/until.js";

let h: Harness;
test.before(async () => {
  // A short interval, so the keep-alive test does not wait long; the others finish well before it
  // matters, and a stray keep-alive is filtered out of their frames anyway.
  h = await startHarness({ sseKeepAliveSeconds: 0.2 });
});
test.after.always(() => h?.close());

const book = (title: string) =>
  anyPack(
    BookSchema,
    create(BookSchema, { name: "shelves/1/books/2", title, publishedAt: timestampFromDate(new Date("2024-05-01T10:00:00Z")) }),
  );

/** Frames without keep-alives, each as its raw text. */
const framesOf = (text: string) =>
  text
    .split("\n\n")
    .filter((f) => f !== "" && f !== ": keep-alive")
    .map((f) => `${f}\n\n`);

test("frames carry comment, event, id, retry and the data in the service's REST style", async (t) => {
  const res = await h.send("library", {
    method: "GET",
    path: "/v1/shelves/1:events",
    headers: { accept: "application/x-ndjson" },
    async *respond() {
      yield { comment: "connected" };
      yield { event: "book", id: "41", data: book("Dune") };
      yield { event: "book", id: "42", retryMs: 3000, data: book("Emma") };
    },
  });
  t.is(res.status, 200);
  t.is(res.headers["content-type"], "text/event-stream; charset=utf-8", "whatever the Accept header says");
  t.is(res.headers["cache-control"], "no-cache");
  t.is(res.headers.connection, "keep-alive");
  t.is(res.headers["x-accel-buffering"], "no");
  t.truthy(res.headers["x-request-id"]);
  const dune = {
    name: "shelves/1/books/2",
    title: "Dune",
    subtitle: null,
    genre: "GENRE_UNSPECIFIED",
    tags: [],
    publishedAt: "2024-05-01T10:00:00Z",
    author: null,
    contributors: [],
    pageCount: null,
    isbn: "0",
    labels: {},
    edition: null,
  };
  t.deepEqual(framesOf(res.text), [
    ": connected\n\n",
    `event: book\nid: 41\ndata: ${JSON.stringify(dune)}\n\n`,
    `event: book\nid: 42\nretry: 3000\ndata: ${JSON.stringify({ ...dune, title: "Emma" })}\n\n`,
  ]);
});

test("a batch writes its frames in order; an empty batch writes nothing", async (t) => {
  const res = await h.send("library", {
    method: "GET",
    path: "/v1/shelves/1:eventBatches",
    async *respond() {
      yield { events: [{ comment: "connected" }] };
      yield { events: [] };
      yield {
        events: [{ event: "book", id: "1", data: book("Dune") }, { event: "dropped" }, { event: "book", id: "2", data: book("Emma") }],
      };
    },
  });
  t.is(res.status, 200);
  t.is(res.headers["content-type"], "text/event-stream; charset=utf-8");
  const frames = framesOf(res.text);
  t.is(frames.length, 4);
  t.is(frames[0], ": connected\n\n");
  t.regex(frames[1]!, /^event: book\nid: 1\ndata: \{.*"title":"Dune"/);
  t.is(frames[2], "event: dropped\n\n");
  t.regex(frames[3]!, /^event: book\nid: 2\ndata: \{.*"title":"Emma"/);
});

test("proto field names and no nulls for a service of the other style", async (t) => {
  const res = await h.send("inventory", {
    method: "GET",
    path: "/inventory/items:events",
    async *respond() {
      yield { event: "item", id: "1", data: anyPack(ItemSchema, create(ItemSchema, { id: "a", dimensions: { widthCm: 2 } })) };
    },
  });
  const item = { id: "a", quantity: 0, tags: [], dimensions: { width_cm: 2, height_cm: 0 } };
  t.deepEqual(framesOf(res.text), [`event: item\nid: 1\ndata: ${JSON.stringify(item)}\n\n`]);
});

test("a comment of several lines is one comment line each; line breaks leave event and id", async (t) => {
  const res = await h.send("library", {
    method: "GET",
    path: "/v1/shelves/1:events",
    async *respond() {
      yield { comment: "one\ntwo\r\nthree" };
      yield { event: "a\nb", id: "1\r2\u00003" };
    },
  });
  t.deepEqual(framesOf(res.text), [": one\n: two\n: three\n\n", "event: ab\nid: 123\n\n"]);
});

test("a failure before the first frame keeps its HTTP status and error body", async (t) => {
  const res = await h.send("library", {
    method: "GET",
    path: "/v1/shelves/1:events",
    // biome-ignore lint/correctness/useYield: a stream that fails before its first message
    async *respond() {
      throw new ConnectError("the stream token is unknown or expired", Code.Unauthenticated);
    },
  });
  t.is(res.status, 401);
  t.is(res.headers["content-type"], "application/problem+json");
  t.like(res.json, { status: 401, detail: "the stream token is unknown or expired" });
});

test("a failure after the first frame ends the stream with an error event", async (t) => {
  const res = await h.send("inventory", {
    method: "GET",
    path: "/inventory/items:events",
    async *respond() {
      yield { comment: "connected" };
      throw new ConnectError("stream aborted by peer", Code.Aborted);
    },
  });
  t.is(res.status, 200);
  t.deepEqual(framesOf(res.text), [
    ": connected\n\n",
    `event: error\ndata: ${JSON.stringify({ error: "ABORTED", message: "stream aborted by peer" })}\n\n`,
  ]);
});

test("data of a type the front does not know ends the stream with an internal error, logged", async (t) => {
  const { AssetSchema } = await import("../../gen/tracking/v1/asset_pb.js");
  const res = await h.send("library", {
    method: "GET",
    path: "/v1/shelves/1:events",
    async *respond() {
      yield { comment: "connected" };
      yield { event: "asset", id: "1", data: anyPack(AssetSchema, create(AssetSchema, { id: "x" })) };
    },
  });
  const frames = framesOf(res.text);
  t.is(frames.length, 2);
  t.regex(frames[1]!, /^event: error\ndata: \{.*"status":500/);
  const logged = h.logs.find((l) => l.obj.requestId === res.headers["x-request-id"]);
  t.regex(String(logged?.obj.err), /tracking\.v1\.Asset is unknown to this front/);
});

test("Last-Event-ID reaches the service", async (t) => {
  const res = await h.send("library", {
    method: "GET",
    path: "/v1/shelves/1:events",
    headers: { "last-event-id": "17" },
    async *respond() {
      yield { comment: "connected" };
    },
  });
  t.is(res.call?.headers.get("last-event-id"), "17");
});

/** Opens an event stream and hands out its text as it arrives. */
function openStream(port: number, path: string, requestId: string) {
  return new Promise<{ res: IncomingMessage; text: () => string; destroy: () => void }>((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, headers: { "x-request-id": requestId }, agent: false });
    req.on("error", reject);
    req.on("response", (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString()));
      resolve({ res, text: () => text, destroy: () => req.destroy() });
    });
    req.end();
  });
}

test("an idle stream gets keep-alive comments, and a client that leaves cancels the call", async (t) => {
  let cancelled!: () => void;
  const isCancelled = new Promise<void>((r) => (cancelled = r));
  h.script("sse-idle", async function* (_input, ctx) {
    yield { comment: "connected" };
    await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
    cancelled();
  });
  const stream = await openStream(h.port("library"), "/v1/shelves/1:events", "sse-idle");
  await until(() => stream.text().includes(": keep-alive\n\n"), "a keep-alive comment");
  t.true(stream.text().startsWith(": connected\n\n: keep-alive\n\n"));
  stream.destroy();
  await isCancelled;
  t.true(h.captured("sse-idle")!.signal.aborted);
});

test("a frame is rendered once for every client of the same event, never for a different one", (t) => {
  const base = createRegistry(LibraryService.file);
  let lookups = 0;
  const counting: Registry = new Proxy(base, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (key !== "getMessage" || typeof value !== "function") return value;
      return (...args: unknown[]) => {
        lookups++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const framer = createSseFramer(serviceStyleOf(LibraryService), counting);
  const event = (title: string, id = "7") => create(ServerSentEventSchema, { event: "book", id, data: book(title) });
  const frame = (message: ReturnType<typeof event>) => framer.frames(message)[0]!;
  const first = frame(event("Dune"));
  const afterFirst = lookups;
  t.true(afterFirst > 0);
  // A copy, as each client's stream carries its own: the same bytes come back, not re-rendered.
  t.is(frame(event("Dune")), first);
  t.is(lookups, afterFirst, "the second client's frame came from the cache");
  const other = frame(event("Emma"));
  t.not(other.toString(), first.toString(), "same id, different data: rendered anew");
  t.regex(other.toString(), /"title":"Emma"/);
  t.regex(frame(event("Dune", "8")).toString(), /^event: book\nid: 8\n/);
});
