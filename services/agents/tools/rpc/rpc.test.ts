// Mesh RPC tools: names, tiers and parameters read from the gen/ descriptors, and calls through the
// generated Connect client to a real service host (a test mesh hosting tracking, with an API key).
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import test from "ava";
import { startTestMesh, type TestMesh } from "../../../../test/support/start-mesh.js";
import { trackingModule } from "../../../tracking/index.js";
import { defaultToolsSettings } from "../settings.js";
import { testToolContext, toolNamed } from "../testing.js";
import { ToolError } from "../tool.js";
import { functionNameOf, meshRpcTools } from "./index.js";

const tools = meshRpcTools();
const tool = (name: string) => toolNamed(tools, name);
const KEY = "tools-test-operator-key-0001";

let mesh: TestMesh;
test.before(async () => {
  mesh = await startTestMesh({
    modules: [trackingModule],
    flags: [`--Auth:ApiKeys=${JSON.stringify([{ Name: "tools", Role: "operator", Key: KEY }])}`],
  });
});
test.after.always(() => mesh?.close());

async function context(mesh: { apiKey?: string; bearerToken?: string; address: string }) {
  return testToolContext({ settings: { mesh: { ...defaultToolsSettings().mesh, ...mesh } } });
}

test("every unary rpc of tracking.v1 and protection.v1 is a tool, and every service file of gen/ is read", async (t) => {
  const names = tools.map((x) => x.name);
  t.true(names.every((n) => /^rpc\.(tracking|protection)\.v1\.[A-Za-z]+Service\.[A-Za-z]+$/.test(n)));
  t.is(new Set(names).size, names.length);
  t.true(names.includes("rpc.tracking.v1.AssetService.GetAsset"));
  t.true(names.includes("rpc.protection.v1.AccountService.GetMe"));
  t.false(names.includes("rpc.tracking.v1.EventStreamService.StreamEvents"), "a streaming rpc is no tool");
  t.false(names.includes("rpc.tracking.v1.ObservationService.StreamIngestObservations"));
  for (const pkg of ["tracking", "protection"]) {
    const dir = join("gen", pkg, "v1");
    for (const file of await readdir(dir)) {
      const text = await readFile(join(dir, file), "utf8");
      for (const [, service] of text.matchAll(/export const (\w+)Service: GenService/g)) {
        t.true(
          names.some((n) => n.startsWith(`rpc.${pkg}.v1.${service}Service.`)),
          `${pkg}.v1.${service}Service of ${file} has tools`,
        );
      }
    }
  }
});

test("function names: . becomes _, and a name over 64 characters is cut to 55 + _ + 8 hex of its SHA-256", (t) => {
  t.is(toolNamed(tools, "rpc.tracking.v1.AssetService.GetAsset").functionName, "rpc_tracking_v1_AssetService_GetAsset");
  for (const x of tools) {
    const fn = x.functionName ?? x.name;
    t.true(/^[A-Za-z0-9_]{1,64}$/.test(fn), fn);
  }
  const canonical = "rpc.protection.v1.SomeVeryLongServiceNameForTesting.AndAnEvenLongerMethodNameThanThat";
  const full = canonical.replace(/\./g, "_");
  t.true(full.length > 64);
  const cut = functionNameOf(canonical);
  t.is(cut, `${full.slice(0, 55)}_${createHash("sha256").update(full).digest("hex").slice(0, 8)}`);
  t.is(cut.length, 64);
  t.is(functionNameOf("rpc.a.B.C"), "rpc_a_B_C");
  const long = toolNamed(tools, "rpc.tracking.v1.GeofenceBreachService.BulkAcknowledgeGeofenceBreaches");
  t.is(long.functionName, functionNameOf(long.name));
  t.regex(long.functionName!, /^rpc_tracking_v1_GeofenceBreachService_BulkAcknowledgeGe_[0-9a-f]{8}$/);
});

test("tiers follow the HTTP rule: GET → A, DELETE → X, POST/PUT/PATCH → C, no rule → X", (t) => {
  t.is(tool("rpc.tracking.v1.AssetService.GetAsset").tier, "A");
  t.is(tool("rpc.tracking.v1.AssetService.ListAssets").tier, "A");
  t.is(tool("rpc.tracking.v1.AssetService.CreateAsset").tier, "C");
  t.is(tool("rpc.tracking.v1.AssetService.UpdateAsset").tier, "C");
  t.is(tool("rpc.tracking.v1.AssetService.DeleteAsset").tier, "X");
  const batch = toolNamed(tools, "rpc.tracking.v1.ObservationService.BatchIngestObservations");
  t.is(batch.tier, "X", "no google.api.http rule");
  t.false(batch.description.includes("REST"));
});

test("parameters are the request message's JSON Schema, REQUIRED fields required", (t) => {
  const create = tool("rpc.tracking.v1.AssetService.CreateAsset").parameters;
  t.deepEqual(create.properties.asset, {
    type: "object",
    properties: {
      name: { type: "string" },
      description: { type: "string" },
      category: { type: "string" },
      speedThresholdKmh: { type: "number" },
    },
  });
  const observation = tool("rpc.tracking.v1.ObservationService.CreateObservation").parameters.properties.observation!;
  t.deepEqual(observation.required, ["observedAt", "latitude", "longitude"]);
  t.is(observation.properties!.observedAt!.type, "string");
  t.deepEqual(tool("rpc.tracking.v1.AssetService.GetAsset").parameters, { type: "object", properties: { id: { type: "string" } } });
});

test("calls go to the service host with Tools:Mesh:ApiKey as X-Api-Key and answer the response JSON", async (t) => {
  const ctx = await context({ apiKey: KEY, address: mesh.serviceUrl });
  const created = (await tool("rpc.tracking.v1.AssetService.CreateAsset").run(
    { asset: { name: "tool van", speedThresholdKmh: 80 } },
    ctx,
  )) as {
    id: string;
    name: string;
    speedThresholdKmh: number;
  };
  t.is(created.name, "tool van");
  t.is(created.speedThresholdKmh, 80);
  t.like(await tool("rpc.tracking.v1.AssetService.GetAsset").run({ id: created.id }, ctx), { id: created.id, name: "tool van" });
  const list = (await tool("rpc.tracking.v1.AssetService.ListAssets").run({}, ctx)) as { items: { id: string }[] };
  t.true(list.items.some((a) => a.id === created.id));
  await tool("rpc.tracking.v1.AssetService.DeleteAsset").run({ id: created.id }, ctx);
  await t.throwsAsync(tool("rpc.tracking.v1.AssetService.GetAsset").run({ id: created.id }, ctx), {
    instanceOf: ToolError,
    message: /NotFound/,
  });
  await t.throwsAsync(tool("rpc.tracking.v1.AssetService.GetAsset").run({ id: "nope" }, ctx), {
    instanceOf: ToolError,
    message: /InvalidArgument/,
  });
});

test("a missing credential is an Error naming the setting; a wrong one is refused by the service", async (t) => {
  const none = await context({ address: mesh.serviceUrl });
  await t.throwsAsync(tool("rpc.tracking.v1.AssetService.ListAssets").run({}, none), {
    instanceOf: ToolError,
    message: "rpc.tracking.v1.AssetService.ListAssets takes an API key: set Tools:Mesh:ApiKey",
  });
  await t.throwsAsync(tool("rpc.protection.v1.AccountService.GetMe").run({}, none), {
    instanceOf: ToolError,
    message: "rpc.protection.v1.AccountService.GetMe takes a bearer token: set Tools:Mesh:BearerToken",
  });
  const wrong = await context({ apiKey: "wrong-key-wrong-key-99", address: mesh.serviceUrl });
  const error = await t.throwsAsync(tool("rpc.tracking.v1.AssetService.ListAssets").run({}, wrong), {
    instanceOf: ToolError,
    message: /Unauthenticated.*\(check Tools:Mesh:ApiKey\)/,
  });
  t.false(error!.message.includes("wrong-key-wrong-key-99"));
});

test("arguments that do not fit the request message are an Error", async (t) => {
  const ctx = await context({ apiKey: KEY, address: mesh.serviceUrl });
  await t.throwsAsync(tool("rpc.tracking.v1.AssetService.CreateAsset").run({ asset: { speedThresholdKmh: "fast" } }, ctx), {
    instanceOf: ToolError,
    message: /not a tracking\.v1\.CreateAssetRequest/,
  });
});
