import { create, fromJson } from "@bufbuild/protobuf";
import { StructSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import test from "ava";
import { createFront } from "../../../gateway/index.js";
import { BadRequestSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { CreateBookRequestSchema, GetBookRequestSchema } from "../../../test/gen/meshwork/testing/v1/transcoding_pb.js";
import { AssetService, type AssetInput } from "../../../gen/tracking/v1/asset_pb.js";
import { ObservationService } from "../../../gen/tracking/v1/observation_pb.js";
import { buildRoutes, createDirectTransport, definePartialService, errorInterceptor, startServiceHost } from "../host/index.js";
import { memoryLogger } from "../../../test/support/host-fixtures.js";
import { invalidTextFields, requiredFieldsInterceptor, textIntegrityInterceptor } from "./index.js";

const NUL = "\u0000";

test("text fields are checked at every depth: nested, repeated, map keys and values", (t) => {
  const request = fromJson(CreateBookRequestSchema, {
    book: {
      title: `t${NUL}`,
      tags: ["fine", `x${NUL}`],
      labels: { ok: `v${NUL}`, [`k${NUL}`]: "fine" },
      author: { displayName: `a${NUL}` },
      contributors: [{ displayName: "fine" }, { displayName: NUL }],
    },
  });
  t.deepEqual(
    invalidTextFields(CreateBookRequestSchema, request)
      .map((v) => v.field)
      .sort(),
    ["book.author.display_name", "book.contributors[1].display_name", "book.labels", "book.labels[ok]", "book.tags[1]", "book.title"],
  );
  t.deepEqual(invalidTextFields(CreateBookRequestSchema, fromJson(CreateBookRequestSchema, { book: { title: "Straße 🚚" } })), []);
});

test("Struct and Value strings (oneof members, map keys) and lone surrogates are caught", (t) => {
  const struct = fromJson(StructSchema, { a: `x${NUL}`, b: { c: ["ok", "\ud800"] }, [`k${NUL}`]: 1, pair: "\ud83d\ude9a" });
  const bad = invalidTextFields(StructSchema, struct);
  t.deepEqual(bad.map((v) => v.field).sort(), [
    "fields",
    "fields[a].string_value",
    "fields[b].struct_value.fields[c].list_value.values[1].string_value",
  ]);
  t.regex(bad.find((v) => v.field.endsWith("values[1].string_value"))!.description, /surrogate/);
  // Built in code (as a binary or Connect decoder would), not parsed: protobuf-es' JSON reader
  // refuses lone surrogates in string fields itself, the interceptor must not rely on it.
  const lone = create(CreateBookRequestSchema, { book: { title: "\udc00x" } });
  t.deepEqual(
    invalidTextFields(CreateBookRequestSchema, lone).map((v) => v.field),
    ["book.title"],
  );
});

test("a message type that holds no text at all is not walked", (t) => {
  t.deepEqual(invalidTextFields(GetBookRequestSchema, create(GetBookRequestSchema, { name: "shelves/1/books/2" })), []);
});

async function startHost() {
  const logger = memoryLogger();
  const seen: string[] = [];
  const services = [
    definePartialService(AssetService, {
      createAsset(req) {
        seen.push(req.asset?.name ?? "");
        return { id: "7d1f6c3e-0000-4000-8000-000000000001", name: req.asset?.name ?? "" };
      },
    }),
    definePartialService(ObservationService, {
      async streamIngestObservations(requests) {
        let accepted = 0;
        for await (const input of requests) {
          seen.push(input.deviceIdentifier ?? "");
          accepted++;
        }
        return { accepted };
      },
    }),
  ];
  const routes = buildRoutes({ services, interceptors: [errorInterceptor(logger), requiredFieldsInterceptor, textIntegrityInterceptor] });
  const host = await startServiceHost({ host: "127.0.0.1", port: 0, routes, logger, shutdownGraceMs: 1_000 });
  return { host, routes, logger, seen, url: `http://127.0.0.1:${host.port}` };
}

function violations(err: unknown): string[] {
  assertConnectError(err);
  return err.findDetails(BadRequestSchema).flatMap((d) => d.fieldViolations.map((v) => v.field));
}

function assertConnectError(err: unknown): asserts err is ConnectError {
  if (!(err instanceof ConnectError)) throw new Error(`expected a ConnectError, got ${String(err)}`);
}

for (const protocol of ["connect-json", "grpc"] as const) {
  test(`${protocol}: a NUL in a write is InvalidArgument naming the field, and the handler never runs`, async (t) => {
    const { host, seen, url } = await startHost();
    t.teardown(() => host.close());
    const transport =
      protocol === "grpc"
        ? createGrpcTransport({ baseUrl: url })
        : createConnectTransport({ baseUrl: url, httpVersion: "2", useBinaryFormat: false });
    const assets = createClient(AssetService, transport);
    const err = await t.throwsAsync(assets.createAsset({ asset: { name: `Van${NUL}7` } as AssetInput }));
    t.is((err as ConnectError).code, Code.InvalidArgument);
    t.deepEqual(violations(err), ["asset.name"]);
    t.deepEqual(seen, []);
    const ok = await assets.createAsset({ asset: { name: "Van 7" } as AssetInput });
    t.is(ok.name, "Van 7");
  });
}

test("a client stream is checked message by message: the bad one fails the call", async (t) => {
  const { host, seen, url } = await startHost();
  t.teardown(() => host.close());
  const observations = createClient(ObservationService, createGrpcTransport({ baseUrl: url }));
  async function* inputs() {
    yield { deviceIdentifier: "dev-1", latitude: 51.5, longitude: -0.1 };
    yield { deviceIdentifier: `dev${NUL}2`, latitude: 51.5, longitude: -0.1 };
  }
  const err = await t.throwsAsync(observations.streamIngestObservations(inputs()));
  t.is((err as ConnectError).code, Code.InvalidArgument);
  t.deepEqual(violations(err), ["device_identifier"]);
  t.deepEqual(seen, ["dev-1"], "the first, valid message reached the handler; the second did not");
});

test("REST: a JSON body with \\u0000 answers 400 problem+json naming the field in the front's naming", async (t) => {
  const { host, routes, seen } = await startHost();
  t.teardown(() => host.close());
  const front = createFront({
    name: "tracking",
    host: "127.0.0.1",
    port: 0,
    services: [AssetService],
    transport: createDirectTransport(routes),
    logger: memoryLogger(),
  });
  const { port } = await front.listen();
  t.teardown(() => front.close());
  const res = await fetch(`http://127.0.0.1:${port}/api/assets`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    // Written by hand: the escape must reach the server as the six characters \u0000.
    body: '{"name":"Van\\u00007","category":"vehicle"}',
  });
  t.is(res.status, 400);
  t.is(res.headers.get("content-type"), "application/problem+json");
  const problem = (await res.json()) as { errors?: Record<string, string[]> };
  t.deepEqual(Object.keys(problem.errors ?? {}), ["name"]);
  t.regex(problem.errors!.name![0]!, /NUL/);
  t.deepEqual(seen, []);
});

test("REST: a lone surrogate escaped in JSON answers 400 naming the field and the reason", async (t) => {
  const { host, routes, seen } = await startHost();
  t.teardown(() => host.close());
  const front = createFront({
    name: "tracking",
    host: "127.0.0.1",
    port: 0,
    services: [AssetService],
    transport: createDirectTransport(routes),
    logger: memoryLogger(),
  });
  const { port } = await front.listen();
  t.teardown(() => front.close());
  const res = await fetch(`http://127.0.0.1:${port}/api/assets`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: '{"name":"Van\\ud8007","category":"vehicle"}',
  });
  t.is(res.status, 400);
  const problem = (await res.json()) as { errors?: Record<string, string[]> };
  t.deepEqual(problem.errors, { name: ["must not contain an unpaired UTF-16 surrogate"] });
  t.deepEqual(seen, []);
});
