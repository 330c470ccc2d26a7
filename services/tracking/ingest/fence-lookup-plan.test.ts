// With many fences, an observation chunk must look up the fences it touches by primary key, not
// read every fence: the plan of statement 2 (record-chunk.ts) is checked with 10,000 active fences,
// on whichever database the suite runs against (PGlite by default, PostgreSQL in CI).
import test from "ava";
import { startTestMesh, type TestMesh } from "../../../test/support/start-mesh.js";
import { readSql } from "./record-chunk.js";
import { pgArray, queryOn, type Query } from "../store/sql.js";

let mesh: TestMesh;
let q: Query;
let someFences: string[];
let someDevices: string[];

test.before(async () => {
  mesh = await startTestMesh();
  q = queryOn(mesh.db!.em());
  await q(
    `insert into tracking_geofence (id, name, description, center_latitude, center_longitude, radius_meters, is_active, is_seeded, created_at, updated_at)
     select gen_random_uuid(), 'plan fence ' || n, null, 51.3 + (n % 100) * 0.004, -0.5 + (n / 100) * 0.008, 50 + n % 250, true, false, now(), now()
       from generate_series(1, 10000) as n`,
  );
  // A fleet that has been driving: 1,000 devices, each with a state for a fence or two.
  await q(
    `insert into tracking_device (id, identifier, is_seeded, created_at, updated_at)
     select gen_random_uuid(), 'plan-device-' || n, false, now(), now() from generate_series(1, 1000) as n`,
  );
  await q(
    `insert into tracking_geofence_state (device_id, geofence_id, inside, observed_at)
     select d.id, g.id, g.n % 2 = 0, now()
       from (select id, row_number() over (order by id) as n from tracking_device) d
       join (select id, row_number() over (order by id) as n from tracking_geofence) g on g.n in (d.n, d.n + 1000)`,
  );
  await q("analyze tracking_geofence");
  await q("analyze tracking_geofence_state");
  someFences = (await q<{ id: string }>("select id from tracking_geofence order by random() limit 20")).map((r) => r.id);
  someDevices = (await q<{ id: string }>("select id from tracking_device order by random() limit 30")).map((r) => r.id);
});

test.after.always(async () => {
  await mesh?.close();
});

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  Plans?: PlanNode[];
}

function nodesOn(plan: PlanNode, relation: string, found: PlanNode[] = []): PlanNode[] {
  if (plan["Relation Name"] === relation) found.push(plan);
  for (const child of plan.Plans ?? []) nodesOn(child, relation, found);
  return found;
}

for (const withLastAlert of [false, true]) {
  test(`statement 2${withLastAlert ? " with the last-alert part" : ""} reads the proposed fences by primary key among 10,000`, async (t) => {
    const empty = "{}";
    const devices = pgArray.uuids(someDevices);
    const bindings = [...Array<string>(13).fill(empty), devices, ...(withLastAlert ? [devices] : []), pgArray.uuids(someFences)];
    // EXPLAIN without ANALYZE: planned, not run, so nothing is inserted or locked.
    const [row] = await q<{ "QUERY PLAN": unknown }>(`explain (format json) ${readSql(withLastAlert)}`, bindings);
    const raw = row!["QUERY PLAN"];
    const plan = (typeof raw === "string" ? JSON.parse(raw) : raw) as { Plan: PlanNode }[];
    const scans = nodesOn(plan[0]!.Plan, "tracking_geofence");
    t.true(scans.length > 0, "the statement reads tracking_geofence");
    t.deepEqual(
      scans.map((s) => s["Node Type"]).filter((type) => type === "Seq Scan"),
      [],
      `fence scans: ${scans.map((s) => s["Node Type"]).join(", ")}`,
    );
  });
}
