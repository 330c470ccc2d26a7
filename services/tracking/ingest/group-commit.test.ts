// Concurrent single records share transactions (group commit) without sharing anything else: each
// caller gets its own observation, each event carries the trace of the request that caused it,
// and a record the database refuses fails alone.
import { fromBinary } from "@bufbuild/protobuf";
import test from "ava";
import { randomBytes } from "node:crypto";
import { startTestMesh, type TestMesh } from "../../../test/support/start-mesh.js";
import { ObservationRecordedSchema } from "../../../gen/tracking/v1/events_pb.js";
import type { BusMessage } from "../../runtime/bus/index.js";
import { createLogger } from "../../runtime/logging/index.js";
import { startTelemetry, type Telemetry } from "../../runtime/telemetry/index.js";
import { queryOn, toDate } from "../store/sql.js";
import { until } from "../../../test/support/until.js";

let telemetry: Telemetry;
let mesh: TestMesh;
const recorded: BusMessage[] = [];
const refusedMetadata = "refuse-this-record";

test.before(async () => {
  // Context propagation on (spans are no-ops), as the meshwork command runs.
  telemetry = await startTelemetry({
    serviceName: "group-commit-test",
    exporter: "none",
    env: {},
    logger: createLogger({ level: "silent" }),
  });
  mesh = await startTestMesh();
  await mesh.db!.em().execute(`
    create function group_commit_test_refuse() returns trigger language plpgsql as $$
    begin
      if new.metadata = '${refusedMetadata}' then raise exception 'refused by the group-commit test'; end if;
      return new;
    end $$`);
  await mesh.db!.em().execute(`
    create trigger group_commit_test_refuse before insert on tracking_observation
    for each row execute function group_commit_test_refuse()`);
  await mesh.bus!.subscribe({ stream: "TRACKING", filterSubjects: ["tracking.v1.observation.recorded"] }, (m) => recorded.push(m));
});

test.after.always(async () => {
  await mesh?.close();
  await telemetry?.shutdown();
});

const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
  const res = await fetch(`${mesh.frontUrl("tracking")}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

test("concurrent single records: each answered on its own, each event with its own trace; a refused one fails alone", async (t) => {
  const count = 40;
  const run = randomBytes(4).toString("hex");
  const devices: { id: string; identifier: string }[] = [];
  for (let i = 0; i < count; i++) {
    const res = await post("/api/devices", { identifier: `group-${run}-${i}` });
    t.is(res.status, 200);
    devices.push(res.body as { id: string; identifier: string });
  }
  const base = Date.now() - 60_000;
  const traceOf = (i: number) => `${run}${i.toString(16).padStart(24, "0")}`;
  const calls = devices.map((d, i) =>
    post(
      "/api/observations/ingest",
      // Half by id, half by identifier; two devices of the same instant each get their own row.
      {
        ...(i % 2 ? { deviceId: d.id } : { deviceIdentifier: d.identifier }),
        observedAt: new Date(base + (i % 5) * 1000).toISOString(),
        latitude: 48.1 + i / 1000,
        longitude: 11.5,
        speedKmh: 50,
      },
      { traceparent: `00-${traceOf(i)}-00f067aa0ba902b7-01` },
    ),
  );
  // The database refuses one record that passed every check of ours (a trigger this test installs
  // raises for its metadata): that record's transaction fails, and only that record.
  const refused = post("/api/observations/ingest", {
    deviceId: devices[0]!.id,
    observedAt: new Date(base + 30_000).toISOString(),
    latitude: 48.1,
    longitude: 11.5,
    metadata: refusedMetadata,
  });
  const answers = await Promise.all(calls);
  const bad = await refused;

  t.true(bad.status >= 500, `the refused record answered ${bad.status}`);
  answers.forEach((res, i) => {
    t.is(res.status, 200, JSON.stringify(res.body));
    t.is(res.body.deviceId, devices[i]!.id);
    t.is(res.body.observedAt, new Date(base + (i % 5) * 1000).toISOString().replace(".000Z", "Z"));
  });
  t.is(new Set(answers.map((a) => a.body.id)).size, count, "one observation each");

  await mesh.drainOutbox();
  await until(() => recorded.length >= count, "an ObservationRecorded event per call");
  const traceByObservation = new Map<string, string>();
  for (const m of recorded) {
    const observation = fromBinary(ObservationRecordedSchema, m.data).observation!;
    traceByObservation.set(observation.id, m.headers.traceparent ?? "");
  }
  answers.forEach((res, i) => {
    t.regex(
      traceByObservation.get(String(res.body.id)) ?? "none",
      new RegExp(`^00-${traceOf(i)}-[0-9a-f]{16}-01$`),
      `the event of call ${i}`,
    );
  });

  // They did share transactions: a chunk stamps one receivedAt on all its rows.
  const rows = await queryOn(mesh.db!.em())<{ received_at: unknown }>(
    `select o.received_at from tracking_observation o join tracking_device d on d.id = o.device_id where d.identifier like ?`,
    [`group-${run}-%`],
  );
  t.is(rows.length, count);
  t.true(new Set(rows.map((r) => toDate(r.received_at).getTime())).size < count, "some records were written together");
});
