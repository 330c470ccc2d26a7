// Random and adversarial requests at every REST path of every front, derived from the contracts'
// google.api.http rules: whatever a client sends, the answer is never a 5xx. Fixed seed and a
// bounded number of runs, so it is an ordinary, repeatable test.
import type { DescField, DescMessage, DescService } from "@bufbuild/protobuf";
import fc from "fast-check";
import test from "ava";
import { compileRouteTable, routeSourcesOf, type CompiledRoute } from "../../gateway/transcoder/route-table.js";
import { typeRegistryOf } from "../../gateway/transcoder/type-registry.js";
import { meshRpcFiles } from "../../services/agents/tools/rpc/contracts.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";

const SEED = 20_261_124;
const RUNS = Number(process.env.MESHWORK_FUZZ_RUNS ?? 250);

// Every tracking.v1 contract with a service: the list the mesh RPC tools read too.
const trackingFiles = meshRpcFiles.filter((file) => file.proto.package === "tracking.v1");
const trackingServices: DescService[] = trackingFiles.flatMap((f) => f.services);
const routes = compileRouteTable(routeSourcesOf(trackingServices), typeRegistryOf(trackingServices)).routes;

let mesh: TestMesh;
test.before(async () => {
  mesh = await startTestMesh();
});
test.after.always(() => mesh?.close());

// --- Adversarial values -------------------------------------------------------------------------

const nasty = fc.constantFrom(
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udfffy",
  "\ud83d\ude9a",
  "",
  " ",
  "null",
  "NaN",
  "-0",
  "1e999",
  "-1e999",
  "99999999999999999999999999",
  "00000000-0000-0000-0000-000000000000",
  "7d1f6c3e-0000-4000-8000-00000000000g",
  "not-a-uuid",
  "2024-13-45T25:61:61Z",
  "9999-12-31T23:59:59Z",
  "0001-01-01T00:00:00Z",
  "'; drop table tracking_asset; --",
  "%00",
  "../../etc/passwd",
  "x".repeat(70_000),
);
const numbers = fc.oneof(
  fc.constantFrom(0, -1, 1, 1e308, -1e308, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 2 ** 64, 0.1, -0),
  fc.double({ noNaN: true }),
  fc.integer(),
);
const leaf: fc.Arbitrary<unknown> = fc.oneof(nasty, numbers, fc.boolean(), fc.constant(null), fc.string({ maxLength: 40 }), fc.uuid());

const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Percent-encodes like encodeURIComponent, but a lone surrogate becomes the invalid UTF-8 bytes a hostile client would send. */
function encode(value: string): string {
  return value
    .split(loneSurrogate)
    .map((part) => encodeURIComponent(part))
    .join("%ED%A0%80");
}

function deep(depth: number): unknown {
  let value: unknown = "bottom";
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { a: value };
  return value;
}

const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { depthSize: "small" },
  leaf,
  fc.array(leaf, { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), leaf, { maxKeys: 4 }),
  fc.integer({ min: 20, max: 3000 }).map(deep),
);

function jsonNamesOf(message: DescMessage): string[] {
  return message.fields.flatMap((f: DescField) => [f.jsonName, f.name]);
}

/** A body shaped like the route's input (known names, wrong or hostile values), or not at all. */
function bodyFor(route: CompiledRoute): fc.Arbitrary<string | undefined> {
  const target = route.request.bodyField?.message ?? route.request.input;
  const names = jsonNamesOf(target);
  const nestedNames = target.fields.flatMap((f) => (f.message ? jsonNamesOf(f.message).map((n) => [f.jsonName, n] as const) : []));
  const shaped = fc
    .record({
      known: fc
        .subarray(names.length ? names : ["x"])
        .chain((keys) => fc.tuple(...keys.map((k) => fc.tuple(fc.constant(k), fc.oneof(leaf, anyJson))))),
      nested: nestedNames.length ? fc.subarray(nestedNames, { maxLength: 3 }) : fc.constant([] as (readonly [string, string])[]),
      nestedValue: leaf,
      unknown: fc.option(fc.string({ maxLength: 10 }), { nil: undefined }),
    })
    .map(({ known, nested, nestedValue, unknown }) => {
      const body: Record<string, unknown> = Object.fromEntries(known);
      for (const [outer, inner] of nested) body[outer] = { ...(body[outer] as object), [inner]: nestedValue };
      if (unknown !== undefined) body[unknown] = 1;
      return JSON.stringify(body);
    });
  return fc.oneof(
    { weight: 6, arbitrary: shaped },
    { weight: 2, arbitrary: anyJson.map((v) => JSON.stringify(v) ?? "null") },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        undefined,
        "",
        "{",
        "{]",
        '{"a":',
        "\u0000",
        '{"name":"\\ud800"}',
        '{"name":"a\\u0000b"}',
        "[]",
        "null",
        "1e99999",
        '"\\u',
        "\uFEFF{}",
      ),
    },
    { weight: 1, arbitrary: fc.string({ maxLength: 60 }) },
  );
}

function pathFor(route: CompiledRoute): fc.Arbitrary<string> {
  const segment = fc.oneof(
    fc.uuid(),
    nasty.filter((s) => s.length < 200),
    fc.string({ minLength: 1, maxLength: 20 }),
  );
  const variables = route.template.match(/\{[^}]+\}/g) ?? [];
  return fc.tuple(...variables.map(() => segment)).map((values) => {
    let i = 0;
    return route.template.replace(/\{[^}]+\}/g, () => encode(values[i++] as string));
  });
}

function queryFor(route: CompiledRoute): fc.Arbitrary<string> {
  const names = [...jsonNamesOf(route.request.input), "format", "page", "pageSize", "unknownParam", "a.b"];
  const value = fc.oneof(
    fc.string({ maxLength: 20 }),
    nasty.filter((s) => s.length < 200),
    numbers.map(String),
    fc.uuid(),
  );
  return fc
    .array(fc.tuple(fc.constantFrom(...names), value), { maxLength: 4 })
    .map((pairs) => pairs.map(([k, v]) => `${encode(k)}=${encode(v)}`).join("&"));
}

interface Shot {
  route: string;
  method: string;
  url: string;
  body: string | undefined;
  contentType: string | undefined;
}

const shots: fc.Arbitrary<Shot> = fc.constantFrom(...routes).chain((route) =>
  fc
    .record({
      path: pathFor(route),
      query: queryFor(route),
      body: route.request.body === "none" ? fc.option(fc.constant("{}"), { nil: undefined }) : bodyFor(route),
      contentType: fc.oneof(
        { weight: 8, arbitrary: fc.constant("application/json") },
        { weight: 1, arbitrary: fc.constantFrom("application/json; charset=utf-8", "text/plain", undefined) },
      ),
    })
    .map(({ path, query, body, contentType }) => ({
      route: route.label,
      method: route.httpMethod,
      url: `${path}${query ? `?${query}` : ""}`,
      body: route.httpMethod === "GET" || route.httpMethod === "DELETE" ? undefined : body,
      contentType: body === undefined ? undefined : contentType,
    })),
);

async function fire(base: string, shot: Shot): Promise<number> {
  const headers: Record<string, string> = {};
  if (shot.contentType) headers["content-type"] = shot.contentType;
  const res = await fetch(`${base}${shot.url}`, { method: shot.method, headers, body: shot.body, signal: AbortSignal.timeout(20_000) });
  // Streams (the event stream) answer headers then stay open: the status is what is judged.
  await res.body?.cancel();
  return res.status;
}

test("every REST path of the tracking front: random and adversarial requests never answer 5xx", async (t) => {
  t.true(routes.length > 30, `the contracts yield ${routes.length} routes`);
  const base = mesh.frontUrl("tracking");
  const seen = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(shots, async (shot) => {
      const status = await fire(base, shot);
      seen.set(status, (seen.get(status) ?? 0) + 1);
      if (status >= 500) throw new Error(`${shot.method} ${shot.url.slice(0, 300)} (${shot.route}) answered ${status}`);
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
  t.log(`statuses: ${JSON.stringify(Object.fromEntries(seen))}`);
  t.true(
    [...seen.keys()].some((s) => s >= 400 && s < 500),
    "the fuzzer reached the validation paths",
  );
});

test("fronts without services answer any method and path without a 5xx", async (t) => {
  const bases = ["protection", "agents"].map((name) => mesh.frontUrl(name));
  const arbitrary = fc.record({
    base: fc.constantFrom(...bases),
    method: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE"),
    path: fc.oneof(
      fc.webPath(),
      nasty.filter((s) => s.length < 200).map((s) => `/${encode(s)}`),
    ),
    body: fc.option(fc.string({ maxLength: 50 }), { nil: undefined }),
  });
  await fc.assert(
    fc.asyncProperty(arbitrary, async ({ base, method, path, body }) => {
      const res = await fetch(`${base}${path}`, { method, body: method === "GET" ? undefined : body, signal: AbortSignal.timeout(20_000) });
      await res.body?.cancel();
      if (res.status >= 500) throw new Error(`${method} ${path} answered ${res.status}`);
    }),
    { seed: SEED, numRuns: 60, endOnFailure: true },
  );
  t.pass();
});
