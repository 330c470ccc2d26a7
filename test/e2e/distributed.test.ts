// Distributed mode: the tracking service in one mesh, a gateway-only mesh calling it through
// gRPC over HTTP/2 — the same REST behaviour as the in-process path; and every registered service
// served alone (`meshwork serve <service>`) behind a gateway. Several processes per service:
// distributed-processes.test.ts.
import test from "ava";
import { modules } from "../../services/registry.js";
import { startTestMesh } from "../support/start-mesh.js";

test("a gateway-only process serves /api/assets from a separate tracking service over gRPC", async (t) => {
  const service = await startTestMesh({ mode: { kind: "service", name: "tracking" } });
  t.teardown(() => service.close());
  t.deepEqual(service.fronts, [], "a service process opens no REST front");
  const gateway = await startTestMesh({ mode: { kind: "gateway" }, flags: [`--Services:Tracking:Address=${service.serviceUrl}`] });
  t.teardown(() => gateway.close());
  t.is(gateway.servicePort, undefined, "a gateway process hosts no service");

  const base = gateway.frontUrl("tracking");
  const created = await fetch(`${base}/api/assets`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-request-id": "dist-1" },
    body: JSON.stringify({ name: "remote" }),
  });
  t.is(created.status, 200);
  t.is(created.headers.get("x-request-id"), "dist-1");
  const { id } = (await created.json()) as { id: string };
  const got = await fetch(`${base}/api/assets/${id}`);
  t.like(await got.json(), { id, name: "remote", description: null });

  const bad = await fetch(`${base}/api/assets/zzz`);
  t.is(bad.status, 400, "codes survive the gRPC hop");
  t.true(Array.isArray(((await bad.json()) as { errors: Record<string, unknown> }).errors.id), "field errors survive too");
  t.is((await fetch(`${base}/api/assets/00000000-0000-4000-8000-000000000000`)).status, 404);
});

test("a gateway whose service is down answers 503 with Retry-After, not 500", async (t) => {
  const gateway = await startTestMesh({
    mode: { kind: "gateway" },
    flags: ["--Services:Tracking:Address=http://127.0.0.1:9", "--Fronts:UnavailableRetryAfterSeconds=7"],
  });
  t.teardown(() => gateway.close());
  const res = await fetch(`${gateway.frontUrl("tracking")}/api/assets`);
  t.is(res.status, 503);
  t.is(res.headers.get("retry-after"), "7");
});

// A health answer of each service's front, which its service gives (through the gRPC hop).
const healthPaths: Readonly<Record<string, string>> = { tracking: "/api/health", protection: "/health", agents: "/health" };

for (const module of modules) {
  test(`meshwork serve ${module.name}: the service alone on its host, reached by a gateway`, async (t) => {
    const service = await startTestMesh({ mode: { kind: "service", name: module.name } });
    t.teardown(() => service.close());
    const setting = `Services:${module.name[0]!.toUpperCase()}${module.name.slice(1)}:Address`;
    const gateway = await startTestMesh({ mode: { kind: "gateway" }, flags: [`--${setting}=${service.serviceUrl}`] });
    t.teardown(() => gateway.close());
    const path = healthPaths[module.name];
    if (path === undefined) return t.fail(`no health path known for the service ${module.name}: add one above`);
    const res = await fetch(`${gateway.frontUrl(module.front.name)}${path}`);
    t.is(res.status, 200, await res.text());
  });
}
