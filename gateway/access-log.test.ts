// The access log level (Logging:AccessLevel in the mesh): a front's line per answered request, and
// per request refused before routing, is written at the configured level or not at all, while
// server errors are logged whatever it says. Logged through pino into memory, as the mesh logs.
import { once } from "node:events";
import { connect } from "node:net";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import test, { type ExecutionContext } from "ava";
import { pino } from "pino";
import { LibraryService } from "../test/gen/meshwork/testing/v1/transcoding_pb.js";
import { exchange } from "../test/support/gateway-harness.js";
import { type AccessLogLevel, createFront } from "./index.js";

interface Line {
  level: number;
  msg: string;
  status?: number;
  requestId?: string;
}

// pino's numeric levels.
const TRACE = 10;
const DEBUG = 20;
const INFO = 30;
const WARN = 40;
const ERROR = 50;

const transport = createRouterTransport(({ service }) =>
  service(LibraryService, {
    getBook(req) {
      if (req.name === "broken") throw new ConnectError("the shelf fell over", Code.Internal);
      if (req.name === "away") throw new ConnectError("the library is closed", Code.Unavailable);
      return { name: req.name, title: "A title" };
    },
  }),
);

/** A front logging through pino at `loggerLevel` into memory, its access lines at `accessLogLevel`. */
async function startFront(t: ExecutionContext, accessLogLevel: AccessLogLevel | undefined, loggerLevel = "trace") {
  const lines: Line[] = [];
  const logger = pino({ level: loggerLevel }, { write: (line: string) => void lines.push(JSON.parse(line) as Line) });
  const front = createFront({
    name: "access",
    host: "127.0.0.1",
    port: 0,
    services: [LibraryService],
    transport,
    logger,
    maxHeaderBytes: 1024,
    ...(accessLogLevel !== undefined ? { accessLogLevel } : {}),
  });
  const { port } = await front.listen();
  t.teardown(() => front.close());
  const get = async (path: string, requestId: string) => {
    const res = await exchange(port, "GET", path, { "x-request-id": requestId }, undefined);
    return { status: res.status, logged: lines.filter((l) => l.requestId === requestId) };
  };
  /** Headers larger than the front accepts: refused by Node's parser before any routing. */
  const oversized = async () => {
    const socket = connect(port, "127.0.0.1");
    let received = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      received += chunk;
    });
    socket.on("error", () => {});
    socket.write(`GET /v1/books/b1 HTTP/1.1\r\nhost: x\r\nx-padding: ${"a".repeat(4096)}\r\n\r\n`);
    await once(socket, "close");
    return {
      statusLine: received.slice(0, received.indexOf("\r\n")),
      logged: lines.filter((l) => l.msg === "request refused before routing"),
    };
  };
  return { get, oversized };
}

const levelsOf = (lines: readonly Line[]) => lines.map((l) => [l.level, l.msg, l.status]);

test("default: a 2xx request line at info, and a refusal before routing at info", async (t) => {
  const front = await startFront(t, undefined, "info");
  const ok = await front.get("/v1/books/b1", "ok-default");
  t.is(ok.status, 200);
  t.deepEqual(levelsOf(ok.logged), [[INFO, "request", 200]]);
  const refused = await front.oversized();
  t.is(refused.statusLine, "HTTP/1.1 431 Request Header Fields Too Large");
  t.deepEqual(levelsOf(refused.logged), [[INFO, "request refused before routing", 431]]);
});

test("debug and trace: the request line at that level, and gone when the logger's level is above it", async (t) => {
  const debug = await startFront(t, "debug");
  t.deepEqual(levelsOf((await debug.get("/v1/books/b1", "ok-debug")).logged), [[DEBUG, "request", 200]]);
  t.deepEqual(levelsOf((await debug.oversized()).logged), [[DEBUG, "request refused before routing", 431]]);

  const trace = await startFront(t, "trace");
  t.deepEqual(levelsOf((await trace.get("/v1/books/b1", "ok-trace")).logged), [[TRACE, "request", 200]]);

  // Logging:Level=info with Logging:AccessLevel=debug: no line per request.
  const quiet = await startFront(t, "debug", "info");
  const ok = await quiet.get("/v1/books/b1", "ok-debug-at-info");
  t.is(ok.status, 200);
  t.deepEqual(ok.logged, []);
  const broken = await quiet.get("/v1/books/broken", "broken-debug-at-info");
  t.is(broken.status, 500);
  t.deepEqual(levelsOf(broken.logged), [[ERROR, "request failed", 500]]);
});

test("silent: no line for 2xx or 4xx answers nor refusals, while a 500 and a 503 are still logged", async (t) => {
  const front = await startFront(t, "silent");
  const ok = await front.get("/v1/books/b1", "ok-silent");
  t.is(ok.status, 200);
  t.deepEqual(ok.logged, []);
  const missing = await front.get("/v1/no-such-route", "missing-silent");
  t.is(missing.status, 404);
  t.deepEqual(missing.logged, []);
  const refused = await front.oversized();
  t.is(refused.statusLine, "HTTP/1.1 431 Request Header Fields Too Large");
  t.deepEqual(refused.logged, []);

  const broken = await front.get("/v1/books/broken", "broken-silent");
  t.is(broken.status, 500);
  t.deepEqual(levelsOf(broken.logged), [[ERROR, "request failed", 500]]);
  const away = await front.get("/v1/books/away", "away-silent");
  t.is(away.status, 503);
  t.deepEqual(levelsOf(away.logged), [[WARN, "request failed: service unavailable", 503]]);
});

test("a logger at warn keeps info access lines out and the 500s in", async (t) => {
  const front = await startFront(t, "info", "warn");
  t.deepEqual((await front.get("/v1/books/b1", "ok-at-warn")).logged, []);
  t.deepEqual(levelsOf((await front.get("/v1/books/broken", "broken-at-warn")).logged), [[ERROR, "request failed", 500]]);
});
