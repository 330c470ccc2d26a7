// A front's connection limits, driven over raw sockets: slow headers are cut after the headers
// timeout, oversized headers answer 431 in the front's error style, connections over the cap are
// closed, and the request timeout never cuts a long answer such as a stream.
import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { createRouterTransport } from "@connectrpc/connect";
import test, { type ExecutionContext } from "ava";
import { InventoryService, LibraryService } from "../test/gen/meshwork/testing/v1/transcoding_pb.js";
import { createFront, type FrontOptions } from "./index.js";
import { captureLogger } from "../test/support/gateway-harness.js";

const STREAM_PAUSE_MS = 1_500;

const transport = createRouterTransport(({ service }) => {
  service(LibraryService, {
    getBook: (req) => ({ name: req.name, title: "t" }),
    async *watchShelf(req) {
      yield { shelfId: req.shelfId, sequence: 1 };
      // Longer than the request timeout below: the stream must outlive it.
      await delay(STREAM_PAUSE_MS);
      yield { shelfId: req.shelfId, sequence: 2 };
    },
  });
  service(InventoryService, { getItem: (req) => ({ id: req.id }) });
});

async function startFront(t: ExecutionContext, extra: Partial<FrontOptions> & { services: FrontOptions["services"] }) {
  const front = createFront({ name: "limits", host: "127.0.0.1", port: 0, transport, logger: captureLogger([]), ...extra });
  const { port } = await front.listen();
  t.teardown(() => front.close());
  return { front, port };
}

/** Everything the server sends until it closes the connection. */
async function untilClosed(socket: Socket): Promise<string> {
  let received = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    received += chunk;
  });
  socket.on("error", () => {});
  await once(socket, "close");
  return received;
}

async function open(port: number): Promise<Socket> {
  const socket = connect(port, "127.0.0.1");
  await once(socket, "connect");
  return socket;
}

function bodyOf(raw: string): unknown {
  return JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4));
}

test("a client that never finishes its headers is answered 408 and closed after the headers timeout", async (t) => {
  const { port } = await startFront(t, { services: [LibraryService], headersTimeoutSeconds: 0.3, requestTimeoutSeconds: 0.3 });
  const socket = await open(port);
  const started = Date.now();
  socket.write("GET /v1/books/b1 HTTP/1.1\r\nHost: localhost\r\nX-Slow: ");
  const received = await untilClosed(socket);
  // Node's own default would hold the socket for a minute; 0.3 s plus one sweep is the bound here.
  t.true(Date.now() - started < 5_000, `closed after ${Date.now() - started} ms`);
  t.regex(received, /^HTTP\/1\.1 408 /);
  t.like(bodyOf(received), { status: 408, title: "Request Timeout" });
});

test("oversized headers answer 431 as problem+json on a problem-json front", async (t) => {
  const { port } = await startFront(t, { services: [LibraryService], maxHeaderBytes: 2048 });
  const socket = await open(port);
  socket.write(`GET /v1/books/b1 HTTP/1.1\r\nHost: localhost\r\nX-Big: ${"a".repeat(8192)}\r\n\r\n`);
  const received = await untilClosed(socket);
  t.regex(received, /^HTTP\/1\.1 431 /);
  t.regex(received, /content-type: application\/problem\+json/i);
  t.like(bodyOf(received), { status: 431, title: "Request Header Fields Too Large" });
});

test("oversized headers answer 431 as { error, message } on an error-message front", async (t) => {
  const { port } = await startFront(t, { services: [InventoryService], maxHeaderBytes: 2048 });
  const socket = await open(port);
  socket.write(`GET /inventory/items/1 HTTP/1.1\r\nHost: localhost\r\nX-Big: ${"a".repeat(8192)}\r\n\r\n`);
  const received = await untilClosed(socket);
  t.regex(received, /^HTTP\/1\.1 431 /);
  const body = bodyOf(received) as { error: string; message: string };
  t.is(body.error, "REQUEST_HEADER_FIELDS_TOO_LARGE");
  t.truthy(body.message);
});

test("headers within the limit are served as usual", async (t) => {
  const { port } = await startFront(t, { services: [LibraryService], maxHeaderBytes: 2048 });
  const res = await fetch(`http://127.0.0.1:${port}/v1/books/b1`, { headers: { "x-fine": "a".repeat(512) } });
  t.is(res.status, 200);
});

test("connections over the cap are closed without an answer; those under it are served", async (t) => {
  const { front, port } = await startFront(t, { services: [LibraryService], maxConnections: 2 });
  const held: Socket[] = [];
  for (let i = 0; i < 2; i++) {
    const socket = await open(port);
    held.push(socket);
    // A full exchange proves the server has counted the connection.
    socket.write("GET /v1/books/b1 HTTP/1.1\r\nHost: localhost\r\n\r\n");
    await once(socket, "data");
  }
  t.teardown(() => {
    for (const socket of held) socket.destroy();
  });
  const dropped = once(front.server, "drop");
  const extra = connect(port, "127.0.0.1");
  extra.on("connect", () => extra.write("GET /v1/books/b1 HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  const received = await untilClosed(extra);
  await dropped;
  t.is(received, "");
});

test("the request timeout does not cut a stream that outlives it", async (t) => {
  const { port } = await startFront(t, { services: [LibraryService], headersTimeoutSeconds: 0.2, requestTimeoutSeconds: 0.2 });
  const res = await fetch(`http://127.0.0.1:${port}/v1/shelves/7:watch`);
  t.is(res.status, 200);
  const text = await res.text();
  const sequences = text
    .split("\n")
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { sequence?: number }).sequence);
  t.deepEqual(sequences, [1, 2]);
});
