// The same asset operations through the service host with clients written by others: @grpc/grpc-js
// with @grpc/proto-loader reading proto/ (not our generated code), and `buf curl` via reflection.
import * as grpc from "@grpc/grpc-js";
import test from "ava";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AssetService } from "../../gen/tracking/v1/asset_pb.js";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { loadGrpcPackage, unaryCall } from "../support/grpc-js.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";

const run = promisify(execFile);
let mesh: TestMesh;
// biome-ignore lint/suspicious/noExplicitAny: loaded at run time, no static type
let client: any;

test.before(async () => {
  mesh = await startTestMesh();
  const pkg = loadGrpcPackage("tracking/v1/asset.proto");
  client = new pkg.tracking.v1.AssetService(`127.0.0.1:${mesh.servicePort}`, grpc.credentials.createInsecure());
});
test.after.always(async () => {
  client?.close();
  await mesh?.close();
});

const call = <T>(method: string, request: object) => unaryCall<T>(client, method, request);

test("grpc-js creates, reads and lists assets", async (t) => {
  const created = await call<{ id: string; name: string }>("CreateAsset", { asset: { name: "grpc van", speedThresholdKmh: 80 } });
  t.is(created.name, "grpc van");
  const got = await call<{ id: string; speedThresholdKmh: number }>("GetAsset", { id: created.id });
  t.is(got.id, created.id);
  t.is(got.speedThresholdKmh, 80);
  const list = await call<{ items: { id: string }[] }>("ListAssets", {});
  t.true(list.items.some((a) => a.id === created.id));
});

test("grpc-js sees the status codes: INVALID_ARGUMENT with BadRequest details, NOT_FOUND", async (t) => {
  const bad = await t.throwsAsync<grpc.ServiceError>(call("GetAsset", { id: "nope" }));
  t.is(bad!.code, grpc.status.INVALID_ARGUMENT);
  t.truthy(bad!.metadata.get("grpc-status-details-bin").length, "google.rpc.Status details travel in trailers");
  const missing = await t.throwsAsync<grpc.ServiceError>(call("GetAsset", { id: "00000000-0000-4000-8000-000000000000" }));
  t.is(missing!.code, grpc.status.NOT_FOUND);
});

test("buf curl calls GetAsset through server reflection, without .proto files", async (t) => {
  const created = await call<{ id: string }>("CreateAsset", { asset: { name: "curl me" } });
  const { stdout } = await run("node_modules/.bin/buf", [
    "curl",
    "--protocol",
    "grpc",
    "--http2-prior-knowledge",
    "-d",
    JSON.stringify({ id: created.id }),
    `http://127.0.0.1:${mesh.servicePort}/tracking.v1.AssetService/GetAsset`,
  ]);
  const body = JSON.parse(stdout) as { id: string; name: string };
  t.is(body.id, created.id);
  t.is(body.name, "curl me");
});

test("the generated TypeScript client from the README works as shown", async (t) => {
  const assets = createClient(AssetService, createGrpcTransport({ baseUrl: mesh.serviceUrl }));
  const van = await assets.createAsset({ asset: { name: "Van 7", speedThresholdKmh: 90 } });
  const got = await assets.getAsset({ id: van.id });
  t.is(got.name, "Van 7");
  t.is(got.speedThresholdKmh, 90);
  t.is(got.description, undefined, "unset optional fields stay unset on the wire");
});
