// The documented /api/assets paths through the running tracking front, with plain fetch.
import test from "ava";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";

let mesh: TestMesh;
let base: string;

test.before(async () => {
  mesh = await startTestMesh();
  base = mesh.frontUrl("tracking");
});
test.after.always(async () => {
  await mesh?.close();
});

const json = (body: unknown) => ({ method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

async function createAsset(body: unknown) {
  const res = await fetch(`${base}/api/assets`, json(body));
  return { res, body: (await res.json()) as Record<string, unknown> };
}

test("POST creates an asset and answers 200 with every documented property", async (t) => {
  const { res, body } = await createAsset({ name: "Van 7", category: "vehicle", speedThresholdKmh: 90 });
  t.is(res.status, 200);
  t.regex(res.headers.get("content-type") ?? "", /^application\/json/);
  t.regex(String(body.id), /^[0-9a-f-]{36}$/);
  t.is(body.name, "Van 7");
  t.is(body.category, "vehicle");
  t.is(body.speedThresholdKmh, 90);
  t.is(body.description, null, "unset nullable fields are written as null");
  t.truthy(Date.parse(String(body.createdAt)));
  t.is(body.createdAt, body.updatedAt);
});

test("GET one, GET list (a JSON array, newest first), PUT replaces, DELETE answers 200", async (t) => {
  const first = await createAsset({ name: "first" });
  const second = await createAsset({ name: "second", description: "d" });
  const id = String(second.body.id);

  const one = await fetch(`${base}/api/assets/${id}`);
  t.is(one.status, 200);
  t.like(await one.json(), { id, name: "second", description: "d" });

  const list = await fetch(`${base}/api/assets`);
  t.is(list.status, 200);
  const items = (await list.json()) as { id: string }[];
  t.true(Array.isArray(items));
  const ids = items.map((i) => i.id);
  t.true(ids.indexOf(id) < ids.indexOf(String(first.body.id)), "newest first");

  const put = await fetch(`${base}/api/assets/${id}`, { ...json({ name: "renamed", speedThresholdKmh: 50 }), method: "PUT" });
  t.is(put.status, 200);
  const updated = (await put.json()) as Record<string, unknown>;
  t.is(updated.name, "renamed");
  t.is(updated.description, null, "PUT replaces: a property left out becomes null");
  t.is(updated.speedThresholdKmh, 50);
  t.true(Date.parse(String(updated.updatedAt)) >= Date.parse(String(updated.createdAt)));

  const del = await fetch(`${base}/api/assets/${id}`, { method: "DELETE" });
  t.is(del.status, 200);
  t.deepEqual(await del.json(), { id, deleted: true });
  t.is((await fetch(`${base}/api/assets/${id}`)).status, 404);
});

test("a malformed id answers 400 problem+json naming the field; an unknown one 404", async (t) => {
  const bad = await fetch(`${base}/api/assets/not-a-uuid`);
  t.is(bad.status, 400);
  t.is(bad.headers.get("content-type"), "application/problem+json");
  const problem = (await bad.json()) as { status: number; title: string; errors: Record<string, string[]> };
  t.is(problem.status, 400);
  t.truthy(problem.title);
  t.true(Array.isArray(problem.errors.id));

  const missing = await fetch(`${base}/api/assets/00000000-0000-4000-8000-000000000000`);
  t.is(missing.status, 404);
  t.like(await missing.json(), { status: 404 });
  for (const method of ["PUT", "DELETE"]) {
    const res = await fetch(`${base}/api/assets/00000000-0000-4000-8000-000000000000`, { ...json({}), method });
    t.is(res.status, 404, method);
  }
});

// Serial: it counts assets, so no other test may create one meanwhile.
test.serial("bad bodies are client errors and change nothing", async (t) => {
  const before = ((await (await fetch(`${base}/api/assets`)).json()) as unknown[]).length;

  const unknown = await createAsset({ name: "x", colour: "red" });
  t.is(unknown.res.status, 400);
  t.regex(JSON.stringify(unknown.body), /colour/);

  const wrongType = await createAsset({ name: 5 });
  t.is(wrongType.res.status, 400);

  const malformed = await fetch(`${base}/api/assets`, { method: "POST", headers: { "content-type": "application/json" }, body: "{ nope" });
  t.is(malformed.status, 400);

  const noBody = await fetch(`${base}/api/assets`, { method: "POST", headers: { "content-type": "application/json" } });
  t.is(noBody.status, 400);

  const text = await fetch(`${base}/api/assets`, { method: "POST", headers: { "content-type": "text/plain" }, body: "{}" });
  t.is(text.status, 415);

  const negative = await createAsset({ speedThresholdKmh: -5 });
  t.is(negative.res.status, 422);
  t.deepEqual(Object.keys(negative.body.errors as object), ["speedThresholdKmh"]);

  const after = ((await (await fetch(`${base}/api/assets`)).json()) as unknown[]).length;
  t.is(after, before);
});

test("null is accepted for every nullable property", async (t) => {
  const { res, body } = await createAsset({ name: null, description: null, category: null, speedThresholdKmh: null });
  t.is(res.status, 200);
  t.like(body, { name: null, description: null, category: null, speedThresholdKmh: null });
});

test("unknown path 404, wrong method 405, both problem+json", async (t) => {
  const nowhere = await fetch(`${base}/api/nowhere`);
  t.is(nowhere.status, 404);
  t.is(nowhere.headers.get("content-type"), "application/problem+json");
  const patch = await fetch(`${base}/api/assets`, { method: "PATCH" });
  t.is(patch.status, 405);
  t.regex(patch.headers.get("allow") ?? "", /GET/);
});

test("X-Request-Id is echoed when sent and made when not", async (t) => {
  const mine = await fetch(`${base}/api/assets`, { headers: { "x-request-id": "req-abc-123" } });
  t.is(mine.headers.get("x-request-id"), "req-abc-123");
  const made = await fetch(`${base}/api/assets`);
  t.truthy(made.headers.get("x-request-id"));
  t.not(made.headers.get("x-request-id"), "req-abc-123");
});

test("a body over the limit answers 413", async (t) => {
  const res = await fetch(`${base}/api/assets`, json({ name: "x".repeat(1024 * 1024 + 10) }));
  t.is(res.status, 413);
});
