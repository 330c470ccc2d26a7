// The service host's gRPC fast path at the wire, with a raw HTTP/2 client: what it does with
// requests no well-behaved client library sends (too big, malformed deadline, no message, two
// messages, a broken frame), and what it leaves to connect-node (compressed or JSON gRPC).
import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import test from "ava";
import { BookSchema, GetBookRequestSchema, LibraryService } from "../../../test/gen/meshwork/testing/v1/transcoding_pb.js";
import { memoryLogger } from "../../../test/support/host-fixtures.js";
import { frame } from "./grpc-wire.js";
import { buildRoutes, definePartialService, type ServiceHost, startServiceHost } from "./index.js";

let host: ServiceHost;
let session: http2.ClientHttp2Session;

test.before(async () => {
  const library = definePartialService(LibraryService, {
    async getBook(req) {
      return { name: req.name, title: `Title of ${req.name}` };
    },
  });
  host = await startServiceHost({ host: "127.0.0.1", port: 0, routes: buildRoutes({ services: [library] }), logger: memoryLogger() });
  session = http2.connect(`http://127.0.0.1:${host.port}`);
});

test.after.always(async () => {
  session?.close();
  await host?.close();
});

interface Answer {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: Buffer;
}

function call(body: Buffer, extra: http2.OutgoingHttpHeaders = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ":method": "POST",
      ":path": "/meshwork.testing.v1.LibraryService/GetBook",
      "content-type": "application/grpc",
      te: "trailers",
      ...extra,
    });
    let headers: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => (headers = h));
    stream.on("trailers", (h) => (trailers = h));
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("error", reject);
    stream.on("close", () => resolve({ headers, trailers, body: Buffer.concat(chunks) }));
    stream.end(body);
  });
}

const request = (name: string) => frame(toBinary(GetBookRequestSchema, create(GetBookRequestSchema, { name })));
/** The status of a call: from the trailers, or the headers of a trailers-only answer. */
const statusOf = (a: Answer) => Number(a.trailers["grpc-status"] ?? a.headers["grpc-status"]);

test("a well-formed call: headers, one message, trailers with status 0", async (t) => {
  const answer = await call(request("n"), { "grpc-timeout": "5S" });
  t.is(Number(answer.headers[":status"]), 200);
  t.is(answer.headers["content-type"], "application/grpc");
  t.is(answer.trailers["grpc-status"], "0");
  t.is(answer.body.readUInt32BE(1), answer.body.length - 5);
  t.is(fromBinary(BookSchema, answer.body.subarray(5)).title, "Title of n");
});

test("a message bigger than 4 MiB is RESOURCE_EXHAUSTED, refused from its length prefix", async (t) => {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(4 * 1024 * 1024 + 1, 1);
  const answer = await call(Buffer.concat([head, Buffer.alloc(1024)]));
  t.is(statusOf(answer), Code.ResourceExhausted);
  t.regex(String(answer.headers["grpc-message"]), /larger than the limit of 4194304/);
});

test("a malformed grpc-timeout is INVALID_ARGUMENT, naming the header", async (t) => {
  const answer = await call(request("n"), { "grpc-timeout": "soon" });
  t.is(statusOf(answer), Code.InvalidArgument);
  t.regex(decodeURIComponent(String(answer.headers["grpc-message"])), /invalid grpc-timeout "soon"/);
});

test("no message, two messages, or a message cut short: INVALID_ARGUMENT", async (t) => {
  for (const [what, body] of [
    ["none", Buffer.alloc(0)],
    ["two", Buffer.concat([request("a"), request("b")])],
    ["cut", request("abcdef").subarray(0, 8)],
  ] as const) {
    const answer = await call(body);
    t.is(statusOf(answer), Code.InvalidArgument, what);
  }
});

test("a message that is not the request type: INVALID_ARGUMENT, and the host serves on", async (t) => {
  const answer = await call(frame(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f])));
  t.is(statusOf(answer), Code.InvalidArgument);
  t.is((await call(request("after"))).trailers["grpc-status"], "0");
});

test("compressed and JSON gRPC are left to connect-node, which answers them", async (t) => {
  const json = await call(frame(Buffer.from(JSON.stringify({ name: "j" }))), { "content-type": "application/grpc+json" });
  t.is(json.trailers["grpc-status"], "0");
  t.is(JSON.parse(json.body.subarray(5).toString()).title, "Title of j");
  const { gzipSync } = await import("node:zlib");
  const payload = gzipSync(toBinary(GetBookRequestSchema, create(GetBookRequestSchema, { name: "z" })));
  const compressed = Buffer.concat([Buffer.from([1, 0, 0, 0, 0]), payload]);
  compressed.writeUInt32BE(payload.length, 1);
  const zipped = await call(compressed, { "grpc-encoding": "gzip" });
  t.is(zipped.trailers["grpc-status"], "0");
});

test("a compressed frame without grpc-encoding is INTERNAL, as the gRPC specification says", async (t) => {
  const body = Buffer.from(request("n"));
  body[0] = 1;
  const answer = await call(body);
  t.is(statusOf(answer), Code.Internal);
});
