// The direct transport against createRouterTransport, which runs the real Connect protocol in
// memory: every behaviour in the table must come out the same through both.
import { clone, create, createFileRegistry, toJson, type JsonValue } from "@bufbuild/protobuf";
import type { GenService } from "@bufbuild/protobuf/codegenv2";
import { FileDescriptorProtoSchema, type StringValueSchema, file_google_protobuf_wrappers } from "@bufbuild/protobuf/wkt";
import {
  Code,
  ConnectError,
  createClient,
  createRouterTransport,
  type CallOptions,
  type HandlerContext,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import test from "ava";
import { BadRequestSchema } from "../../../gen/google/rpc/error_details_pb.js";
import * as reflectionV1 from "../../../gen/grpc/reflection/v1/reflection_pb.js";
import {
  BookSchema,
  GetBookRequestSchema,
  LibraryService,
  ShelfEventSchema,
  type Book,
  type GetBookRequest,
} from "../../../test/gen/meshwork/testing/v1/transcoding_pb.js";
import { invalidArgument } from "../errors/index.js";
import { serverTracingInterceptor } from "../telemetry/index.js";
import { buildRoutes } from "./build-routes.js";
import { createDirectTransport } from "./direct-transport.js";
import { errorInterceptor } from "./interceptors/error-interceptor.js";
import { requestContextInterceptor } from "./interceptors/request-context-interceptor.js";
import { getRequestId } from "./request-context.js";
import { definePartialService } from "./service-registration.js";
import { memoryLogger } from "../../../test/support/host-fixtures.js";
import { until } from "../../../test/support/until.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** What the handlers noticed, for the table to compare. */
interface Seen {
  requestIds: (string | undefined)[];
  /** Code of the handler's signal reason when it fired during the call. */
  abortCodes: Code[];
  started: () => void;
  whenStarted: Promise<void>;
}

function newSeen(): Seen {
  let started!: () => void;
  const whenStarted = new Promise<void>((resolve) => (started = resolve));
  return { requestIds: [], abortCodes: [], started, whenStarted };
}

function untilAborted(ctx: HandlerContext, seen: Seen): Promise<never> {
  return new Promise((_, reject) => {
    ctx.signal.addEventListener("abort", () => {
      seen.abortCodes.push(ConnectError.from(ctx.signal.reason).code);
      reject(ctx.signal.reason as Error);
    });
  });
}

// Behaviour picked by the request: the book name for GetBook, the limit for WatchShelf.
function library(seen: Seen) {
  return definePartialService(LibraryService, {
    async getBook(req, ctx) {
      seen.requestIds.push(getRequestId());
      await new Promise((resolve) => setImmediate(resolve));
      seen.started();
      switch (req.name) {
        case "invalid":
          throw invalidArgument([{ field: "name", description: "must name a shelf" }]);
        case "missing":
          throw new ConnectError("book missing not found", Code.NotFound);
        case "boom":
          throw new Error("connection refused by db.internal:5432");
        case "slow":
          return await untilAborted(ctx, seen);
      }
      ctx.responseHeader.set("x-answer", "42");
      ctx.responseTrailer.set("x-checksum", "abc");
      return {
        name: req.name,
        title: getRequestId(),
        subtitle: `${ctx.requestHeader.get("x-request-id")} ${ctx.requestHeader.get("x-client")}`,
        tags: ["a", "b"],
        isbn: 9780000000001n,
      };
    },
    async *watchShelf(req, ctx) {
      seen.requestIds.push(getRequestId());
      ctx.responseHeader.set("x-shelf", String(req.shelfId));
      for (let sequence = 1; sequence <= Math.abs(req.limit); sequence++) {
        await new Promise((resolve) => setImmediate(resolve));
        yield { shelfId: req.shelfId, sequence, note: getRequestId() };
      }
      if (req.limit < 0) throw new ConnectError("shelf closed", Code.FailedPrecondition);
      ctx.responseTrailer.set("x-count", String(req.limit));
    },
  });
}

// A client-streaming method, which no contract in this repository has: built from a descriptor.
const summary = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: "meshwork/testing/v1/summary.proto",
    package: "meshwork.testing.v1",
    dependency: ["google/protobuf/wrappers.proto"],
    syntax: "proto3",
    service: [
      {
        name: "SummaryService",
        method: [
          { name: "Join", inputType: ".google.protobuf.StringValue", outputType: ".google.protobuf.StringValue", clientStreaming: true },
        ],
      },
    ],
  }),
  () => file_google_protobuf_wrappers,
).getService("meshwork.testing.v1.SummaryService")!;

// The generated-code shape of the hand-built service, for createClient's types.
type SummaryService = GenService<{
  join: { methodKind: "client_streaming"; input: typeof StringValueSchema; output: typeof StringValueSchema };
}>;

const summaryImpl = {
  async join(requests: AsyncIterable<{ value: string }>) {
    const parts: string[] = [];
    for await (const { value } of requests) parts.push(value);
    return { value: parts.join("+") };
  },
};

const clientHeader: Interceptor = (next) => async (req) => {
  req.header.set("x-client", "yes");
  return await next(req);
};

interface Setup {
  seen: Seen;
  logger: ReturnType<typeof memoryLogger>;
  transport: Transport;
}

type Kind = "direct" | "router";

function setup(kind: Kind): Setup {
  const seen = newSeen();
  const logger = memoryLogger();
  const routes = buildRoutes({
    services: [library(seen), { service: summary, impl: summaryImpl }],
    interceptors: [requestContextInterceptor, serverTracingInterceptor(), errorInterceptor(logger)],
  });
  const transport =
    kind === "direct"
      ? createDirectTransport(routes, { interceptors: [clientHeader] })
      : createRouterTransport(routes, { transport: { interceptors: [clientHeader] } });
  return { seen, logger, transport };
}

interface Outcome {
  ok: boolean;
  message?: JsonValue;
  header?: Record<string, string | null>;
  trailer?: Record<string, string | null>;
  code?: string;
  rawMessage?: string;
  metadataRequestId?: string | null;
  badRequest?: JsonValue[];
  [more: string]: unknown;
}

function failure(error: unknown): Outcome {
  const err = ConnectError.from(error);
  return {
    ok: false,
    code: Code[err.code],
    rawMessage: err.rawMessage,
    metadataRequestId: err.metadata.get("x-request-id"),
    badRequest: err.findDetails(BadRequestSchema).map((detail) => toJson(BadRequestSchema, detail)),
  };
}

async function getBook(s: Setup, name: string, options: CallOptions = {}): Promise<Outcome> {
  const client = createClient(LibraryService, s.transport);
  let header: Headers | undefined;
  let trailer: Headers | undefined;
  try {
    const book = await client.getBook({ name }, { ...options, onHeader: (h) => (header = h), onTrailer: (h) => (trailer = h) });
    return {
      ok: true,
      message: toJson(BookSchema, book),
      header: { "x-request-id": header!.get("x-request-id"), "x-answer": header!.get("x-answer") },
      trailer: { "x-checksum": trailer!.get("x-checksum") },
    };
  } catch (error) {
    return failure(error);
  }
}

async function watchShelf(s: Setup, limit: number, options: CallOptions = {}): Promise<Outcome> {
  const client = createClient(LibraryService, s.transport);
  const events: JsonValue[] = [];
  let header: Headers | undefined;
  let trailer: Headers | undefined;
  try {
    for await (const event of client.watchShelf(
      { shelfId: 7n, limit },
      { ...options, onHeader: (h) => (header = h), onTrailer: (h) => (trailer = h) },
    )) {
      events.push(toJson(ShelfEventSchema, event));
    }
    return {
      ok: true,
      message: events,
      header: { "x-request-id": header!.get("x-request-id"), "x-shelf": header!.get("x-shelf") },
      trailer: { "x-count": trailer!.get("x-count") },
    };
  } catch (error) {
    return { ...failure(error), events };
  }
}

interface Row {
  readonly title: string;
  run(s: Setup): Promise<Outcome>;
  /** The part that must be equal through both transports; all of it by default. */
  same?(outcome: Outcome): unknown;
  /** What both transports must show (beyond being equal to each other). */
  check(t: import("ava").ExecutionContext, outcome: Outcome, s: Setup): void;
}

const table: Row[] = [
  {
    title: "success: message, response header and trailer, request id seen by the handler",
    run: (s) => getBook(s, "shelves/1/books/2", { headers: { "x-request-id": "req-1" } }),
    check(t, outcome, s) {
      t.deepEqual(outcome, {
        ok: true,
        message: { name: "shelves/1/books/2", title: "req-1", subtitle: "req-1 yes", tags: ["a", "b"], isbn: "9780000000001" },
        header: { "x-request-id": "req-1", "x-answer": "42" },
        trailer: { "x-checksum": "abc" },
      });
      t.deepEqual(s.seen.requestIds, ["req-1"]);
    },
  },
  {
    title: "a request id is made up when the caller sends none, and echoed",
    run: async (s) => {
      const outcome = await getBook(s, "shelves/1/books/3");
      // Random per call: compare its shape, and that handler and caller agree on it.
      const echoed = outcome.header?.["x-request-id"];
      const agreed = echoed === s.seen.requestIds[0] && UUID.test(echoed ?? "");
      return { ok: outcome.ok, agreed };
    },
    check(t, outcome) {
      t.deepEqual(outcome, { ok: true, agreed: true });
    },
  },
  {
    title: "InvalidArgument with a google.rpc.BadRequest detail",
    run: (s) => getBook(s, "invalid", { headers: { "x-request-id": "req-2" } }),
    check(t, outcome) {
      t.deepEqual(outcome, {
        ok: false,
        code: "InvalidArgument",
        rawMessage: "name: must name a shelf",
        metadataRequestId: "req-2",
        badRequest: [{ fieldViolations: [{ field: "name", description: "must name a shelf" }] }],
      });
    },
  },
  {
    title: "NotFound",
    run: (s) => getBook(s, "missing", { headers: { "x-request-id": "req-3" } }),
    check(t, outcome) {
      t.like(outcome, { ok: false, code: "NotFound", rawMessage: "book missing not found", metadataRequestId: "req-3" });
    },
  },
  {
    title: "a thrown plain Error becomes Internal 'internal error', logged but not leaked",
    run: async (s) => ({ ...(await getBook(s, "boom", { headers: { "x-request-id": "req-4" } })), logged: logged(s) }),
    check(t, outcome) {
      t.like(outcome, { ok: false, code: "Internal", rawMessage: "internal error", metadataRequestId: "req-4", badRequest: [] });
      t.deepEqual(outcome.logged, [{ rpc: "meshwork.testing.v1.LibraryService/GetBook", err: "connection refused by db.internal:5432" }]);
    },
  },
  {
    title: "an unimplemented method answers Unimplemented",
    run: async (s) => {
      try {
        await createClient(LibraryService, s.transport).listBooks({});
        return { ok: true };
      } catch (error) {
        const { ok, code } = failure(error);
        return { ok, code };
      }
    },
    check(t, outcome) {
      t.deepEqual(outcome, { ok: false, code: "Unimplemented" });
    },
  },
  {
    title: "timeout: DeadlineExceeded for the caller, the handler's signal fires",
    run: async (s) => ({ ...(await getBook(s, "slow", { timeoutMs: 50 })), handler: await abortCodes(s) }),
    // In the router the caller's deadline error is the very object the handler throws, so the
    // server interceptors stamp an x-request-id onto the caller's error; over a network, and here,
    // the caller's deadline error is its own.
    same: ({ metadataRequestId: _, ...rest }) => rest,
    check(t, outcome) {
      t.like(outcome, { ok: false, code: "DeadlineExceeded", metadataRequestId: null });
      t.deepEqual(outcome.handler, ["DeadlineExceeded"]);
    },
  },
  {
    title: "abort: Canceled for the caller, the handler's signal fires",
    run: async (s) => {
      const abort = new AbortController();
      void s.seen.whenStarted.then(() => abort.abort());
      return { ...(await getBook(s, "slow", { signal: abort.signal })), handler: await abortCodes(s) };
    },
    check(t, outcome) {
      t.like(outcome, { ok: false, code: "Canceled" });
      t.deepEqual(outcome.handler, ["Canceled"]);
    },
  },
  {
    title: "an already aborted signal fails the call before the handler runs",
    run: async (s) => ({ ...(await getBook(s, "shelves/1/books/2", { signal: AbortSignal.abort() })), calls: s.seen.requestIds.length }),
    // The router still starts the handler for a call that is already over; no request would
    // leave a network client, and the direct transport does not start it either.
    same: ({ calls: _, ...rest }) => rest,
    check(t, outcome) {
      t.like(outcome, { ok: false, code: "Canceled", calls: 0 });
    },
  },
  {
    title: "server stream: every message in the request context, headers and trailers",
    run: (s) => watchShelf(s, 3, { headers: { "x-request-id": "req-5" } }),
    check(t, outcome) {
      t.deepEqual(outcome, {
        ok: true,
        message: [1, 2, 3].map((sequence) => ({ shelfId: "7", sequence, note: "req-5" })),
        header: { "x-request-id": "req-5", "x-shelf": "7" },
        trailer: { "x-count": "3" },
      });
    },
  },
  {
    title: "server stream failing after two messages",
    run: (s) => watchShelf(s, -2, { headers: { "x-request-id": "req-6" } }),
    check(t, outcome) {
      t.like(outcome, { ok: false, code: "FailedPrecondition", rawMessage: "shelf closed" });
      t.deepEqual(
        outcome.events,
        [1, 2].map((sequence) => ({ shelfId: "7", sequence, note: "req-6" })),
      );
    },
  },
  {
    title: "client stream",
    run: async (s) => {
      const client = createClient(summary as SummaryService, s.transport);
      async function* parts() {
        yield { value: "a" };
        yield { value: "b" };
        yield { value: "c" };
      }
      const joined = await client.join(parts());
      return { ok: true, message: joined.value };
    },
    check(t, outcome) {
      t.deepEqual(outcome, { ok: true, message: "a+b+c" });
    },
  },
  {
    title: "bidi stream: server reflection lists the services",
    run: async (s) => {
      const client = createClient(reflectionV1.ServerReflection, s.transport);
      async function* ask() {
        yield { messageRequest: { case: "listServices" as const, value: "" } };
      }
      const names: string[] = [];
      for await (const res of client.serverReflectionInfo(ask())) {
        if (res.messageResponse.case === "listServicesResponse") {
          names.push(...res.messageResponse.value.service.map((service) => service.name));
        }
      }
      return { ok: true, message: names.sort() };
    },
    check(t, outcome) {
      t.deepEqual(outcome.message, [
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
        "meshwork.testing.v1.LibraryService",
        "meshwork.testing.v1.SummaryService",
      ]);
    },
  },
];

function logged(s: Setup) {
  return s.logger.lines
    .filter((line) => line.level === "error")
    .map((line) => ({ rpc: line.obj.rpc, err: (line.obj.err as Error).message }));
}

/** The handler's abort codes, once its signal has fired (a signal fires once, so one code is all). */
async function abortCodes(s: Setup): Promise<string[]> {
  await until(() => s.seen.abortCodes.length > 0, "the handler's signal to fire");
  return s.seen.abortCodes.map((code) => Code[code]);
}

for (const row of table) {
  test(`direct = router: ${row.title}`, async (t) => {
    const direct = setup("direct");
    const router = setup("router");
    const [viaDirect, viaRouter] = await Promise.all([row.run(direct), row.run(router)]);
    const same = row.same ?? ((outcome: Outcome) => outcome);
    t.deepEqual(same(viaDirect), same(viaRouter), "the direct transport differs from the Connect protocol in memory");
    row.check(t, viaDirect, direct);
  });
}

test("a handler cannot change the caller's request, nor the caller the handler's answer", async (t) => {
  const kept = create(BookSchema, { name: "shelves/1/books/1", title: "Kept", tags: ["x"] });
  let received: GetBookRequest | undefined;
  const transport = createDirectTransport([
    definePartialService(LibraryService, {
      async getBook(req) {
        received = req;
        req.name = "changed by the handler";
        return kept; // the same object every time, as a cache would hand out
      },
    }),
  ]);
  const client = createClient(LibraryService, transport);
  const request = create(GetBookRequestSchema, { name: "shelves/1/books/1" });

  const first = await client.getBook(request);
  t.is(request.name, "shelves/1/books/1", "the caller's request is untouched");
  t.not(received, request);
  first.title = "changed by the caller";
  first.tags.push("y");
  const second = await client.getBook(request);
  t.deepEqual(toJson(BookSchema, second), { name: "shelves/1/books/1", title: "Kept", tags: ["x"] });
  t.deepEqual(toJson(BookSchema, kept), toJson(BookSchema, clone(BookSchema, second)), "the handler's object is unchanged");
});

test("a response the handler froze reaches every caller as that one instance, uncopied", async (t) => {
  const shared = Object.freeze(create(BookSchema, { name: "shelves/1/books/1", title: "Shared", tags: Object.freeze(["x"]) as string[] }));
  const transport = createDirectTransport([definePartialService(LibraryService, { getBook: () => shared })]);
  const client = createClient(LibraryService, transport);
  const [a, b] = await Promise.all([client.getBook({}), client.getBook({})]);
  t.is(a, shared);
  t.is(b, shared);
  t.throws(
    () => {
      (a as { title: string }).title = "changed";
    },
    { instanceOf: TypeError },
    "nobody can change it (ESM code is strict)",
  );
});

test("without defensive copies the handler gets the caller's request and the caller the handler's answer", async (t) => {
  const kept = create(BookSchema, { name: "shelves/1/books/1", title: "Kept" });
  let received: GetBookRequest | undefined;
  let receivedHeader: Headers | undefined;
  let answeredHeader: Headers | undefined;
  const transport = createDirectTransport(
    [
      definePartialService(LibraryService, {
        getBook(req, ctx) {
          received = req;
          receivedHeader = ctx.requestHeader;
          answeredHeader = ctx.responseHeader;
          ctx.responseHeader.set("x-answer", "yes");
          return kept;
        },
      }),
    ],
    { defensiveCopies: false },
  );
  const request = create(GetBookRequestSchema, { name: "shelves/1/books/1" });
  const header = new Headers({ "x-asked": "1" });
  const res = await transport.unary(LibraryService.method.getBook, undefined, undefined, header, request);
  t.is(received, request, "the very message the caller built");
  t.is(res.message, kept, "the very message the handler returned");
  t.true(res.header === answeredHeader, "the handler's response headers, not a copy");
  t.is(res.header.get("x-answer"), "yes");
  t.is(receivedHeader!.get("x-asked"), "1");
});

test("a caller changing its request while the handler awaits does not reach the handler", async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const transport = createDirectTransport([
    definePartialService(LibraryService, {
      async getBook(req) {
        await gate;
        return { name: req.name };
      },
    }),
  ]);
  const request = create(GetBookRequestSchema, { name: "original" });
  const pending = createClient(LibraryService, transport).getBook(request);
  await new Promise((resolve) => setImmediate(resolve));
  request.name = "changed after the call";
  release();
  t.is((await pending).name, "original");
});

test("the shutdown signal aborts running handlers", async (t) => {
  const shutdown = new AbortController();
  const seen = newSeen();
  const logger = memoryLogger();
  const routes = buildRoutes({ services: [library(seen)], interceptors: [requestContextInterceptor, errorInterceptor(logger)] });
  const transport = createDirectTransport(routes, { shutdownSignal: shutdown.signal });
  void seen.whenStarted.then(() => shutdown.abort(new ConnectError("server is shutting down", Code.Unavailable)));
  const err = await t.throwsAsync(createClient(LibraryService, transport).getBook({ name: "slow" }));
  t.is(ConnectError.from(err).code, Code.Unavailable);
  t.deepEqual(seen.abortCodes, [Code.Unavailable]);
});

test("a caller that stops reading a stream cancels the handler and lets it clean up", async (t) => {
  let cleanedUp = false;
  let handlerSignal: AbortSignal | undefined;
  const transport = createDirectTransport([
    definePartialService(LibraryService, {
      async *watchShelf(req, ctx) {
        handlerSignal = ctx.signal;
        try {
          for (let sequence = 1; ; sequence++) yield { shelfId: req.shelfId, sequence };
        } finally {
          cleanedUp = true;
        }
      },
    }),
  ]);
  // The transport itself: createClient's iterables hide return(), so breaking out never reaches it.
  const res = await transport.stream(LibraryService.method.watchShelf, undefined, undefined, undefined, single({ shelfId: 1n }));
  for await (const event of res.message) {
    if (event.sequence === 2) break;
  }
  await new Promise((resolve) => setImmediate(resolve));
  t.true(handlerSignal?.aborted);
  t.is(ConnectError.from(handlerSignal?.reason).code, Code.Canceled);
  t.true(cleanedUp);
});

test("aborting a stream ends the caller's loop with Canceled and the handler's work", async (t) => {
  let cleanedUp = false;
  const transport = createDirectTransport([
    definePartialService(LibraryService, {
      async *watchShelf(req, ctx) {
        try {
          for (let sequence = 1; !ctx.signal.aborted; sequence++) {
            yield { shelfId: req.shelfId, sequence };
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
        } finally {
          cleanedUp = true;
        }
      },
    }),
  ]);
  const abort = new AbortController();
  const seen: number[] = [];
  const err = await t.throwsAsync(async () => {
    for await (const event of createClient(LibraryService, transport).watchShelf({ shelfId: 1n }, { signal: abort.signal })) {
      seen.push(event.sequence);
      if (event.sequence === 2) abort.abort();
    }
  });
  t.is(ConnectError.from(err).code, Code.Canceled);
  t.deepEqual(seen, [1, 2]);
  await until(() => cleanedUp, "the handler's finally block");
  t.true(cleanedUp);
});

async function* single<T>(value: T): AsyncIterable<T> {
  yield value;
}

test("the handler's signal fires when a call completes, as connect-es does", async (t) => {
  let signal: AbortSignal | undefined;
  const transport = createDirectTransport([
    definePartialService(LibraryService, {
      getBook(_req, ctx) {
        signal = ctx.signal;
        t.false(ctx.signal.aborted);
        return {} as Book;
      },
    }),
  ]);
  await createClient(LibraryService, transport).getBook({});
  t.true(signal?.aborted);
});

test("a signal a client interceptor puts on the request cancels the call too", async (t) => {
  const seen = newSeen();
  const routes = buildRoutes({ services: [library(seen)], interceptors: [requestContextInterceptor, errorInterceptor(memoryLogger())] });
  const ownDeadline: Interceptor = (next) => async (req) => await next({ ...req, signal: AbortSignal.timeout(30) });
  const transport = createDirectTransport(routes, { interceptors: [ownDeadline] });
  const err = await t.throwsAsync(createClient(LibraryService, transport).getBook({ name: "slow" }));
  // AbortSignal.timeout() aborts with a TimeoutError, which connect-es reads as Canceled.
  t.is(ConnectError.from(err).code, Code.Canceled);
  t.deepEqual(seen.abortCodes, [Code.Canceled]);
});
