// Each front is its own listener and answers in its interface's style, even before a service
// is attached to it: problem+json for tracking, { error, message } for protection (an UPPER_SNAKE
// code) and agents (the HTTP reason phrase).
import test from "ava";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";

let mesh: TestMesh;
test.before(async () => {
  mesh = await startTestMesh();
});
test.after.always(async () => {
  await mesh?.close();
});

test("three fronts, three ports", (t) => {
  const ports = mesh.fronts.map((f) => f.port);
  t.deepEqual(mesh.fronts.map((f) => f.name).sort(), ["agents", "protection", "tracking"]);
  t.is(new Set(ports).size, 3);
});

test("tracking answers an unknown path with problem+json", async (t) => {
  const res = await fetch(`${mesh.frontUrl("tracking")}/v1/account`);
  t.is(res.status, 404);
  t.is(res.headers.get("content-type"), "application/problem+json");
  t.like(await res.json(), { status: 404 });
});

for (const [name, error] of [
  ["protection", "NOT_FOUND"],
  ["agents", "Not Found"],
] as const) {
  test(`${name} answers an unknown path with { error, message }`, async (t) => {
    const res = await fetch(`${mesh.frontUrl(name)}/api/assets`, { headers: { "x-request-id": `front-${name}` } });
    t.is(res.status, 404);
    t.regex(res.headers.get("content-type") ?? "", /^application\/json/);
    t.is(res.headers.get("x-request-id"), `front-${name}`);
    const body = (await res.json()) as { error: string; message: string };
    t.is(body.error, error);
    t.is(typeof body.message, "string");
    t.deepEqual(Object.keys(body).sort(), ["error", "message"]);
  });
}
