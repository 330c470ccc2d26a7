// GET /api/health keeps its report when a check fails: 503 with { status, checks } naming the
// failing dependency (and Retry-After), while gRPC callers get UNAVAILABLE as before.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import test from "ava";
import { HealthReportSchema, SystemService } from "../../gen/tracking/v1/system_pb.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";

let mesh: TestMesh;
test.before(async () => {
  mesh = await startTestMesh();
});
test.after.always(() => mesh?.close());

test.serial("a failing database check answers 503 with the report naming it", async (t) => {
  const db = mesh.db!;
  const healthy = db.health;
  db.health = async () => ({ ok: false, detail: "connect ECONNREFUSED 10.1.2.3:5432" });
  t.teardown(() => {
    db.health = healthy;
  });

  const res = await fetch(`${mesh.frontUrl("tracking")}/api/health`);
  t.is(res.status, 503);
  t.is(res.headers.get("content-type"), "application/json");
  t.truthy(res.headers.get("retry-after"));
  const text = await res.text();
  const body = JSON.parse(text) as { status: string; checks: Record<string, { status: string; detail?: string }> };
  t.is(body.status, "Unhealthy");
  t.is(body.checks.database?.status, "Unhealthy");
  t.regex(body.checks.database?.detail ?? "", /PostgreSQL unavailable/);
  t.is(body.checks.bus?.status, "Healthy");
  t.false(text.includes("10.1.2.3"), "the driver's words (hosts, ports) stay in the log");

  const system = createClient(SystemService, createGrpcTransport({ baseUrl: mesh.serviceUrl }));
  const err = await t.throwsAsync(system.getHealth({}));
  t.true(err instanceof ConnectError);
  t.is((err as ConnectError).code, Code.Unavailable);
  t.is((err as ConnectError).findDetails(HealthReportSchema)[0]?.checks.database?.status, "Unhealthy");
});

test.serial("a healthy mesh answers 200 with the same shape", async (t) => {
  const res = await fetch(`${mesh.frontUrl("tracking")}/api/health`);
  t.is(res.status, 200);
  const body = (await res.json()) as { status: string; checks: Record<string, { status: string }> };
  t.is(body.status, "Healthy");
  t.deepEqual(Object.keys(body.checks).sort(), ["bus", "database"]);
});

test.serial("device protection: a failing check answers 503 degraded, naming which, with Retry-After", async (t) => {
  const base = `${mesh.frontUrl("protection")}/health`;
  const db = mesh.db!;
  const bus = mesh.bus!;
  const [healthyDb, healthyBus] = [db.health, bus.health];
  t.teardown(() => {
    db.health = healthyDb;
    bus.health = healthyBus;
  });
  db.health = async () => ({ ok: false, detail: "connect ECONNREFUSED 10.1.2.3:5432" });
  const dbDown = await fetch(base);
  t.is(dbDown.status, 503);
  t.truthy(dbDown.headers.get("retry-after"));
  const text = await dbDown.text();
  t.deepEqual({ ...JSON.parse(text), version: "v" }, { status: "degraded", version: "v", db: "error", cache: "ok" });
  t.false(text.includes("10.1.2.3"));
  db.health = healthyDb;
  bus.health = async () => ({ ok: false, detail: "nats down" });
  const busDown = await fetch(base);
  t.is(busDown.status, 503);
  t.like(await busDown.json(), { status: "degraded", db: "ok", cache: "error" });
  bus.health = healthyBus;
  t.like(await (await fetch(base)).json(), { status: "ok", db: "ok", cache: "ok" });
});
