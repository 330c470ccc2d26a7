// The two gRPC fast paths against each other over real HTTP/2: the gateway's client transport
// calling the service host, whose gRPC calls the stream handler serves. Everything a connect-es
// caller relies on: headers and trailers both ways, errors with details and metadata, deadlines
// (as grpc-timeout, ending the call on both sides), cancellation, server streams, client streams
// (through connect-node's transport), and a service that is not there.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type HandlerContext } from "@connectrpc/connect";
import test from "ava";
import { BadRequestSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { ObservationService } from "../../../gen/tracking/v1/observation_pb.js";
import { LibraryService } from "../../../test/gen/meshwork/testing/v1/transcoding_pb.js";
import { memoryLogger } from "../../../test/support/host-fixtures.js";
import { until } from "../../../test/support/until.js";
import { buildRoutes, createGrpcClientTransport, definePartialService, neverSent, type ServiceHost, startServiceHost } from "./index.js";

let host: ServiceHost;
let url: string;
const cancelled: string[] = [];
const seenHeaders = new Map<string, Headers>();

// A stream that waits for its caller to go away, and tells when it sees it go.
async function* untilCancelled(ctx: HandlerContext, label: string) {
  yield { shelfId: 1n, sequence: 0 };
  await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
  cancelled.push(`${label}: ${ConnectError.from(ctx.signal.reason).code}`);
}

test.before(async () => {
  const library = definePartialService(LibraryService, {
    async getBook(req, ctx) {
      seenHeaders.set(req.name, ctx.requestHeader);
      ctx.responseHeader.set("x-book-header", "h");
      ctx.responseTrailer.set("x-book-trailer", "t");
      if (req.name === "missing") {
        throw new ConnectError("no book named 'missing' (ünïcode: 100%)", Code.NotFound, { "x-error-meta": "m" }, [
          { desc: BadRequestSchema, value: create(BadRequestSchema, { fieldViolations: [{ field: "name", description: "unknown" }] }) },
        ]);
      }
      if (req.name.startsWith("slow")) {
        await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
        cancelled.push(`getBook ${req.name}: ${ConnectError.from(ctx.signal.reason).code}`);
        throw ConnectError.from(ctx.signal.reason);
      }
      return { name: req.name, title: `Title of ${req.name}`, tags: ["a", "b"] };
    },
    async *watchShelf(req, ctx) {
      ctx.responseHeader.set("x-watch", "w");
      if (req.limit < 0) {
        yield* untilCancelled(ctx, `watchShelf ${req.shelfId}`);
        return;
      }
      for (let sequence = 1; sequence <= req.limit; sequence++) {
        yield { shelfId: req.shelfId, sequence };
        if (req.shelfId === 13n && sequence === 2) throw new ConnectError("shelf 13 collapsed", Code.DataLoss);
      }
      ctx.responseTrailer.set("x-watch-count", String(req.limit));
    },
  });
  const observations = definePartialService(ObservationService, {
    async streamIngestObservations(requests) {
      let accepted = 0;
      for await (const _ of requests) accepted++;
      return { accepted };
    },
  });
  const routes = buildRoutes({ services: [library, observations] });
  host = await startServiceHost({ host: "127.0.0.1", port: 0, routes, logger: memoryLogger(), shutdownGraceMs: 1_000 });
  url = `http://127.0.0.1:${host.port}`;
});

test.after.always(async () => {
  await host?.close();
});

const library = () => createClient(LibraryService, createGrpcClientTransport({ baseUrl: url }));

test("unary: the answer, response headers and trailers; request headers reach the handler beside the protocol's", async (t) => {
  let header: Headers | undefined;
  let trailer: Headers | undefined;
  const book = await library().getBook(
    { name: "shelves/1/books/2" },
    { headers: { "x-api-key": "k", "x-request-id": "req-7" }, onHeader: (h) => (header = h), onTrailer: (tr) => (trailer = tr) },
  );
  t.is(book.title, "Title of shelves/1/books/2");
  t.deepEqual(book.tags, ["a", "b"]);
  t.is(header?.get("x-book-header"), "h");
  t.is(trailer?.get("x-book-trailer"), "t");
  t.false(header?.has("grpc-status") ?? true);
  const seen = seenHeaders.get("shelves/1/books/2")!;
  t.is(seen.get("x-api-key"), "k");
  t.is(seen.get("x-request-id"), "req-7");
  t.is(seen.get("content-type"), "application/grpc");
  t.is(seen.get("grpc-timeout"), null, "no deadline, no header");
});

test("unary error: code, exact message, details and metadata (the error's and the response headers)", async (t) => {
  const error = await t.throwsAsync(library().getBook({ name: "missing" }), { instanceOf: ConnectError });
  t.is(error.code, Code.NotFound);
  t.is(error.rawMessage, "no book named 'missing' (ünïcode: 100%)");
  t.is(error.metadata.get("x-error-meta"), "m");
  t.is(error.metadata.get("x-book-header"), "h");
  t.is(error.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field, "name");
  t.false(neverSent(error), "an answer of the service's was sent");
});

test("a deadline ends the call on both sides: DeadlineExceeded here, the handler's signal aborted there", async (t) => {
  // Long enough for the call to reach the handler on a loaded machine: a deadline that ran out
  // before the server read the request would leave it no call to end.
  const error = await t.throwsAsync(library().getBook({ name: "slow" }, { timeoutMs: 1_500 }), { instanceOf: ConnectError });
  t.is(error.code, Code.DeadlineExceeded);
  await until(() => cancelled.some((c) => c.startsWith("getBook slow:")), "the handler saw its call end");
});

test("an aborted signal cancels the call and resets the stream; the service sees it", async (t) => {
  const controller = new AbortController();
  const pending = library().getBook({ name: "slow-cancelled" }, { signal: controller.signal });
  await until(() => seenHeaders.has("slow-cancelled"), "the call arrived");
  controller.abort(new ConnectError("caller gave up", Code.Canceled));
  const error = await t.throwsAsync(pending, { instanceOf: ConnectError });
  t.is(error.code, Code.Canceled);
  await until(() => cancelled.includes(`getBook slow-cancelled: ${Code.Canceled}`), "the handler saw the cancellation");
});

test("server stream: every message in order, headers first, trailers at the end", async (t) => {
  let header: Headers | undefined;
  let trailer: Headers | undefined;
  const seen: number[] = [];
  for await (const event of library().watchShelf(
    { shelfId: 4n, limit: 5 },
    { onHeader: (h) => (header = h), onTrailer: (tr) => (trailer = tr) },
  )) {
    t.is(header?.get("x-watch"), "w", "headers arrive before the first message");
    seen.push(event.sequence);
  }
  t.deepEqual(seen, [1, 2, 3, 4, 5]);
  t.is(trailer?.get("x-watch-count"), "5");
});

test("server stream: an error after messages arrives after them, with its code", async (t) => {
  const seen: number[] = [];
  const error = await t.throwsAsync(
    (async () => {
      for await (const event of library().watchShelf({ shelfId: 13n, limit: 5 })) seen.push(event.sequence);
    })(),
    { instanceOf: ConnectError },
  );
  t.deepEqual(seen, [1, 2]);
  t.is(error.code, Code.DataLoss);
  t.is(error.rawMessage, "shelf 13 collapsed");
});

test("server stream: a caller that aborts mid-stream cancels it; the service sees it", async (t) => {
  const controller = new AbortController();
  const error = await t.throwsAsync(
    (async () => {
      for await (const event of library().watchShelf({ shelfId: 21n, limit: -1 }, { signal: controller.signal })) {
        t.is(event.sequence, 0);
        controller.abort();
      }
    })(),
    { instanceOf: ConnectError },
  );
  t.is(error.code, Code.Canceled);
  await until(() => cancelled.includes(`watchShelf 21: ${Code.Canceled}`), "the handler saw the cancellation");
});

test("server stream: returning from the transport's message iterator cancels the stream", async (t) => {
  // connect-es clients hand out iterators without return(), so a `break` there cannot reach the
  // transport; code that reads the transport's response itself (the REST front) can.
  const transport = createGrpcClientTransport({ baseUrl: url });
  const method = LibraryService.method.watchShelf;
  async function* input() {
    yield create(method.input, { shelfId: 23n, limit: -1 });
  }
  const res = await transport.stream(method, undefined, undefined, undefined, input(), undefined);
  const it = res.message[Symbol.asyncIterator]();
  t.is(((await it.next()).value as { sequence: number }).sequence, 0);
  await it.return?.();
  await until(() => cancelled.includes(`watchShelf 23: ${Code.Canceled}`), "the handler saw the cancellation");
});

test("server stream: a deadline on an open stream ends it with DeadlineExceeded, on the client and on the server", async (t) => {
  const seen: number[] = [];
  const error = await t.throwsAsync(
    (async () => {
      for await (const event of library().watchShelf({ shelfId: 22n, limit: -1 }, { timeoutMs: 2_000 })) seen.push(event.sequence);
    })(),
    { instanceOf: ConnectError },
  );
  // The handler sends its first event, then waits for the end of the call.
  t.deepEqual(seen, [0]);
  t.is(error.code, Code.DeadlineExceeded);
  await until(() => cancelled.some((c) => c.startsWith("watchShelf 22:")), "the handler saw its stream end");
});

test("client stream: goes through connect-node's transport and works", async (t) => {
  const observations = createClient(ObservationService, createGrpcClientTransport({ baseUrl: url }));
  async function* inputs() {
    for (let i = 0; i < 3; i++) yield { deviceId: `d-${i}` };
  }
  const summary = await observations.streamIngestObservations(inputs());
  t.is(summary.accepted, 3);
});

test("a service that is not there: Unavailable, and the next call dials again", async (t) => {
  const other = await startServiceHost({
    host: "127.0.0.1",
    port: 0,
    routes: buildRoutes({ services: [] }),
    logger: memoryLogger(),
    shutdownGraceMs: 100,
  });
  const port = other.port;
  await other.close();
  const client = createClient(LibraryService, createGrpcClientTransport({ baseUrl: `http://127.0.0.1:${port}` }));
  const error = await t.throwsAsync(client.getBook({ name: "x" }), { instanceOf: ConnectError });
  t.is(error.code, Code.Unavailable);
  t.true(neverSent(error), "a refused connection sent nothing: another address may take the call");
  // The same transport reaches a host that comes up on that port afterwards.
  const again = await startServiceHost({
    host: "127.0.0.1",
    port,
    routes: buildRoutes({
      services: [definePartialService(LibraryService, { getBook: async (req) => ({ name: req.name, title: "back" }) })],
    }),
    logger: memoryLogger(),
  });
  t.teardown(() => again.close());
  t.is((await client.getBook({ name: "x" })).title, "back");
});

test("a script's one call keeps its process alive until the answer, and an idle connection does not", async (t) => {
  // A child process with no server of its own: only the call's connection can keep it running.
  const script = `
    import { createClient } from "@connectrpc/connect";
    import { LibraryService } from "./test/gen/meshwork/testing/v1/transcoding_pb.js";
    import { createGrpcClientTransport } from "./services/runtime/host/index.js";
    const client = createClient(LibraryService, createGrpcClientTransport({ baseUrl: ${JSON.stringify(url)} }));
    const book = await client.getBook({ name: "from-a-script" });
    console.log(book.title);
  `;
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd: fileURLToPath(new URL("../../../", import.meta.url)),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr.on("data", (c: Buffer) => (err += c.toString()));
  const [code] = (await once(child, "exit")) as [number | null];
  t.is(code, 0, err);
  t.is(out.trim(), "Title of from-a-script", "the answer arrived before the process ended");
});

test("an unknown method: Unimplemented", async (t) => {
  const client = createClient(LibraryService, createGrpcClientTransport({ baseUrl: url }));
  const error = await t.throwsAsync(client.listBooks({}), { instanceOf: ConnectError });
  t.is(error.code, Code.Unimplemented);
});

test("the host still answers Connect and gRPC-web beside the gRPC fast path, from the same routes", async (t) => {
  const { createConnectTransport, createGrpcWebTransport } = await import("@connectrpc/connect-node");
  for (const transport of [
    createConnectTransport({ baseUrl: url, httpVersion: "2" }),
    createGrpcWebTransport({ baseUrl: url, httpVersion: "2" }),
  ]) {
    const book = await createClient(LibraryService, transport).getBook({ name: "n" });
    t.is(book.title, "Title of n");
  }
});
