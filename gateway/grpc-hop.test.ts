// Raw HttpBody answers and forwarded response headers across a real gRPC hop (HTTP/2, h2c), where
// the service's answer also carries content-type application/grpc, grpc-* headers and trailers.
// Every test runs through both gRPC clients a front can have: connect-node's and the mesh's own
// (createGrpcClientTransport, what `meshwork gateway` uses), against connect-node's server.
import test from "ava";
import { get as httpGet } from "node:http";
import { createServer, type Http2Server, type ServerHttp2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { LibraryService, ShelfExportSchema } from "../test/gen/meshwork/testing/v1/transcoding_pb.js";
import { createGrpcClientTransport } from "../services/runtime/host/index.js";
import { createFront, type Front } from "./index.js";
import { captureLogger, exchange, type LogEntry } from "../test/support/gateway-harness.js";

let server: Http2Server;
// The gRPC client keeps its HTTP/2 session open; closing the server waits for it otherwise.
const sessions = new Set<ServerHttp2Session>();
const fronts: Front[] = [];
const ports: { client: string; port: number }[] = [];

const csv = 'id,name\r\n1,"a,b"\r\n';

test.before(async () => {
  const routes = (router: ConnectRouter) =>
    router.service(LibraryService, {
      async exportShelf(req, ctx) {
        ctx.responseHeader.set("x-export-total-count", "9");
        ctx.responseHeader.set("content-disposition", 'attachment; filename="shelf.csv"');
        ctx.responseTrailer.set("x-trailer-only", "1");
        if (req.format === "fail") throw new ConnectError("later", Code.ResourceExhausted, { "retry-after": "3" });
        if (req.format !== "csv") return create(ShelfExportSchema, { count: 2 });
        return create(ShelfExportSchema, {
          count: 2,
          file: { contentType: "text/csv; charset=utf-8", data: new TextEncoder().encode(csv) },
        });
      },
      async downloadFile() {
        return { contentType: "application/octet-stream", data: new Uint8Array([0, 1, 2, 255]) };
      },
    });
  server = createServer(connectNodeAdapter({ routes }));
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const servicePort = (server.address() as AddressInfo).port;
  const logs: LogEntry[] = [];
  const baseUrl = `http://127.0.0.1:${servicePort}`;
  for (const [client, transport] of [
    ["connect-node", createGrpcTransport({ baseUrl })],
    ["meshwork", createGrpcClientTransport({ baseUrl })],
  ] as const) {
    const front = createFront({
      name: "grpc-hop",
      host: "127.0.0.1",
      port: 0,
      services: [LibraryService],
      transport,
      logger: captureLogger(logs),
    });
    fronts.push(front);
    ports.push({ client, port: (await front.listen()).port });
  }
});
test.after.always(async () => {
  for (const front of fronts) await front.close();
  for (const session of sessions) session.destroy();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
});

const eachClient = async (check: (get: (path: string) => ReturnType<typeof exchange>, port: number, client: string) => Promise<void>) => {
  for (const { client, port } of ports) await check((path) => exchange(port, "GET", path, {}, undefined), port, client);
};

test("over gRPC: a set HttpBody field is the raw answer; the service's headers pass, protocol ones do not", async (t) => {
  await eachClient(async (get) => {
    const res = await get("/v1/shelves/1:export?format=csv");
    t.is(res.status, 200);
    t.is(res.headers["content-type"], "text/csv; charset=utf-8");
    t.is(res.text, csv);
    t.is(res.headers["content-disposition"], 'attachment; filename="shelf.csv"');
    t.is(res.headers["x-export-total-count"], "9");
    t.is(res.headers["x-trailer-only"], undefined, "trailers are not response headers");
    for (const name of Object.keys(res.headers)) t.false(name.startsWith("grpc-"), name);
  });
});

test("over gRPC: unset, the HttpBody field is not in the JSON", async (t) => {
  await eachClient(async (get) => {
    const res = await get("/v1/shelves/1:export");
    t.is(res.status, 200);
    t.is(res.headers["content-type"], "application/json");
    t.deepEqual(res.json, { books: [], count: 2, note: null });
    t.is(res.headers["x-export-total-count"], "9");
  });
});

test("over gRPC: an HttpBody response keeps its bytes exactly", async (t) => {
  await eachClient(async (_get, port) => {
    const raw = await new Promise<Buffer>((resolve, reject) => {
      httpGet({ host: "127.0.0.1", port, path: "/v1/downloads/x" }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve(Buffer.concat(chunks)));
        res.on("error", reject);
      }).on("error", reject);
    });
    t.deepEqual([...raw], [0, 1, 2, 255]);
  });
});

test("over gRPC: a failure carries the service's Retry-After", async (t) => {
  await eachClient(async (get) => {
    const res = await get("/v1/shelves/1:export?format=fail");
    t.is(res.status, 429);
    t.is(res.headers["retry-after"], "3");
    t.is(res.headers["content-type"], "application/problem+json");
  });
});
