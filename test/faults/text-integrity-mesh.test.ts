// The whole mesh refuses text PostgreSQL cannot store before any handler runs: a NUL or a lone
// surrogate answers 400 naming the field on REST and InvalidArgument on gRPC, and nothing is written.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import test from "ava";
import { AssetService } from "../../gen/tracking/v1/asset_pb.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";

let mesh: TestMesh;
test.before(async () => {
  mesh = await startTestMesh();
});
test.after.always(() => mesh?.close());

const listNames = async () =>
  ((await (await fetch(`${mesh.frontUrl("tracking")}/api/assets`)).json()) as { name: string }[]).map((a) => a.name);

test("REST: a NUL in a text field is a 400 naming the field, and nothing is stored", async (t) => {
  const res = await fetch(`${mesh.frontUrl("tracking")}/api/assets`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "van\u00007", category: "vehicle" }),
  });
  t.is(res.status, 400);
  const body = (await res.json()) as { errors?: Record<string, string[]> };
  t.truthy(body.errors?.name, JSON.stringify(body));
  t.false((await listNames()).some((name) => name.startsWith("van")));
});

// (A lone surrogate cannot cross gRPC: protobuf's UTF-8 encoding replaces it on the client.)
test("gRPC: a NUL is InvalidArgument naming the field", async (t) => {
  const assets = createClient(AssetService, createGrpcTransport({ baseUrl: mesh.serviceUrl }));
  const error = await t.throwsAsync(assets.createAsset({ asset: { name: "ok", description: "broken \u0000 text" } }));
  const connectError = ConnectError.from(error);
  t.is(connectError.code, Code.InvalidArgument);
  t.regex(connectError.rawMessage, /description/);
});
