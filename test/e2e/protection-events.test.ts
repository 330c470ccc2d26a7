// Device events end to end through the REST front with fetch: batches from the device's owner
// (202, stored whole or refused whole naming events[i].field, replays with client ids stored
// once), GET /v1/events with each filter and paging, /v1/events/summary, the enrollment_change
// events of every enrollment status change, who may read a device's events (owner, organization
// member, authority, partner only with detailed access, stranger 403) and
// protection.v1.event_batch.ingested on the PROTECTION stream.
import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import test, { type ExecutionContext } from "ava";
import { EventBatchIngestedSchema } from "../../gen/protection/v1/events_pb.js";
import { type EventWatch, type SeenEvent, watchStream } from "../support/event-watch.js";
import { type ErrorBody, freshEmail, protectionClient } from "../support/protection.js";
import { type Account, account, enrollment, organizationHolding, partners, registerDevice } from "../support/protection-seed.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

const AUTHORITY = freshEmail("authority");

let mesh: TestMesh;
let api: ReturnType<typeof protectionClient>;
let events: EventWatch<SeenEvent>;

test.before(async () => {
  mesh = await startTestMesh({
    flags: [
      "--Protection:Passwords:MemoryKiB=8",
      "--Protection:Passwords:Iterations=1",
      "--Protection:RateLimits:Register:Limit=100000",
      "--Protection:RateLimits:LoginPerIp:Limit=100000",
      "--Protection:Enrollments:UnenrollDelayUnitSeconds=1",
      "--Protection:Enrollments:MinUnenrollDelayHours=1",
      `--Protection:Authorities=${AUTHORITY}`,
    ],
  });
  api = protectionClient(mesh.frontUrl("protection"));
  events = await watchStream(mesh, "protection.v1.>", "PROTECTION");
});

test.after.always(async () => {
  await events?.stop();
  await mesh?.close();
});

interface EventItem {
  id: string;
  device_id: string;
  enrollment_id: string | null;
  event_type: string;
  timestamp: string;
  domain: string | null;
  layer: string | null;
  detail: Record<string, unknown>;
  received_at: string;
}
interface Page<T> {
  data: T[];
  page: number;
  per_page: number;
  total: number;
}

const expectError = (t: ExecutionContext, res: { status: number; body: unknown }, status: number, code: string, field?: string) => {
  t.is(res.status, status, JSON.stringify(res.body));
  t.is((res.body as ErrorBody).error, code, JSON.stringify(res.body));
  if (field) t.true((res.body as ErrorBody).message.includes(field), JSON.stringify(res.body));
};

const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();

const block = (minutes: number, extra: object = {}) => ({
  event_type: "block",
  timestamp: minutesAgo(minutes),
  domain: "casino.example",
  layer: "dns",
  ...extra,
});

async function ownerWithDevice() {
  const owner = await account(api);
  const device = await registerDevice(api, owner);
  return { owner, device };
}

const list = (who: Account, query = "") => api.authed<Page<EventItem>>(who.token, "GET", `/v1/events${query}`);
const post = (who: Account, device_id: string, batch: object[]) =>
  api.authed<{ accepted: number }>(who.token, "POST", "/v1/events", { device_id, events: batch });

test("POST /v1/events stores a batch (202 accepted); GET /v1/events lists it newest first with every field", async (t) => {
  const { owner, device } = await ownerWithDevice();
  const res = await post(owner, device.id, [
    block(30, { detail: { rule: "casino", list_version: 3 } }),
    { event_type: "tamper_attempt", timestamp: minutesAgo(20), layer: "application", detail: { process: "taskkill" } },
    { event_type: "bypass_attempt", timestamp: minutesAgo(10), domain: "VPN.Example", layer: "browser" },
  ]);
  t.is(res.status, 202, res.text);
  t.deepEqual(res.body, { accepted: 3 });

  const page = await list(owner, `?device_id=${device.id}&event_type=block`);
  t.is(page.status, 200, page.text);
  t.is(page.body.total, 1);
  const [first] = page.body.data;
  t.is(first!.device_id, device.id);
  t.is(first!.enrollment_id, device.enrollmentId);
  t.is(first!.domain, "casino.example");
  t.is(first!.layer, "dns");
  t.deepEqual(first!.detail, { rule: "casino", list_version: 3 });
  t.regex(first!.received_at, /^\d{4}-\d\d-\d\dT/);

  const all = await list(owner, `?device_id=${device.id}`);
  // The registration's enrollment_change (pending → active, just now) is there too.
  t.deepEqual(
    all.body.data.map((e) => e.event_type),
    ["enrollment_change", "bypass_attempt", "tamper_attempt", "block"],
  );
  const bypass = all.body.data[1]!;
  t.is(bypass.domain, "vpn.example");
  t.is(all.body.data[2]!.domain, null, "unset fields are written as null");
  t.deepEqual(all.body.data[0]!.detail, { from: "pending", to: "active" });
  t.deepEqual(Object.keys(bypass).sort(), [
    "detail",
    "device_id",
    "domain",
    "enrollment_id",
    "event_type",
    "id",
    "layer",
    "received_at",
    "timestamp",
  ]);

  await until(
    () =>
      events.seen
        .filter((e) => e.subject === "protection.v1.event_batch.ingested")
        .map((e) => fromBinary(EventBatchIngestedSchema, e.data))
        .find((e) => e.deviceId === device.id),
    "protection.v1.event_batch.ingested of this device",
  );
  const batch = events.seen
    .filter((e) => e.subject === "protection.v1.event_batch.ingested")
    .map((e) => fromBinary(EventBatchIngestedSchema, e.data))
    .filter((e) => e.deviceId === device.id);
  t.is(batch.length, 1, "one event per batch");
  t.like(batch[0], { accountId: owner.id, enrollmentId: device.enrollmentId, accepted: 3, stored: 3, blockCount: 1, tamperAlerts: 2 });
});

test("a replayed batch with client ids is stored once; events without ids are stored each time", async (t) => {
  const { owner, device } = await ownerWithDevice();
  const batch = [block(5, { id: randomUUID() }), block(4, { id: randomUUID() }), block(3)];
  for (let i = 0; i < 3; i++) {
    const res = await post(owner, device.id, batch);
    t.is(res.status, 202, res.text);
    t.is(res.body.accepted, 3);
  }
  const page = await list(owner, `?device_id=${device.id}&event_type=block`);
  t.is(page.body.total, 2 + 3, "two client ids once, the id-less event three times");
  const summary = await api.authed<Record<string, number>>(owner.token, "GET", "/v1/events/summary");
  t.is(summary.body.block, 5, "the rollup counted what was stored, not what was sent");

  // Two retries at once: still once.
  const twice = [block(2, { id: randomUUID() })];
  const answers = await Promise.all([post(owner, device.id, twice), post(owner, device.id, twice)]);
  t.deepEqual(
    answers.map((a) => a.status),
    [202, 202],
  );
  t.is((await list(owner, `?device_id=${device.id}&event_type=block`)).body.total, 6);
  t.is((await api.authed<Record<string, number>>(owner.token, "GET", "/v1/events/summary")).body.block, 6);
});

test("a batch with one bad event is refused whole, naming events[i].field", async (t) => {
  const { owner, device } = await ownerWithDevice();
  const cases: [object[], string][] = [
    [[block(1), { event_type: "explosion", timestamp: minutesAgo(1) }], "events[1].event_type"],
    [[block(1), block(1), { event_type: "block" }], "events[2].timestamp"],
    [[{ ...block(1), timestamp: new Date(Date.now() + 10 * 60_000).toISOString() }], "events[0].timestamp"],
    [[block(1), { ...block(1), timestamp: new Date(Date.now() - 91 * 86_400_000).toISOString() }], "events[1].timestamp"],
    [[block(1), block(1, { layer: "kernel" })], "events[1].layer"],
    [[block(1, { id: "not-a-uuid" })], "events[0].id"],
    [[block(1, { id: "0190a0b0-0000-7000-8000-000000000001" }), block(1, { id: "0190a0b0-0000-7000-8000-000000000001" })], "events[1].id"],
    [[block(1), block(1, { detail: { blob: "x".repeat(4100) } })], "events[1].detail"],
    [[block(1, { domain: "" })], "events[0].domain"],
    [[block(1, { domain: "a\u0000b.example" })], "events[0].domain"],
    [[block(1), block(1, { detail: { note: "nul \u0000 here" } })], "events[1].detail"],
    [[], "events"],
    [Array.from({ length: 101 }, () => block(1)), "events"],
  ];
  for (const [batch, field] of cases) {
    const res = await post(owner, device.id, batch);
    expectError(t, res, 400, "VALIDATION_ERROR", field);
  }
  // A detail that is no object, an unknown property: the front's own 400.
  expectError(t, await post(owner, device.id, [block(1, { detail: [1, 2] })]), 400, "VALIDATION_ERROR");
  expectError(t, await post(owner, device.id, [block(1, { colour: "red" })]), 400, "VALIDATION_ERROR");
  expectError(t, await post(owner, device.id, [block(1, { timestamp: "yesterday" })]), 400, "VALIDATION_ERROR");
  expectError(t, await api.authed(owner.token, "POST", "/v1/events", { events: [block(1)] }), 400, "VALIDATION_ERROR", "device_id");
  t.is((await list(owner, `?device_id=${device.id}&event_type=block`)).body.total, 0, "nothing of a refused batch was stored");
  // The edges themselves pass: 100 events, 4 minutes ahead, 89 days old.
  const edges = [
    ...Array.from({ length: 98 }, () => block(1)),
    { ...block(1), timestamp: new Date(Date.now() + 4 * 60_000).toISOString() },
    { ...block(1), timestamp: new Date(Date.now() - 89 * 86_400_000).toISOString() },
  ];
  t.is((await post(owner, device.id, edges)).status, 202);
});

test("POST /v1/events: another's device 403 FORBIDDEN, an unknown one 404 DEVICE_NOT_FOUND, no token 401", async (t) => {
  const { device } = await ownerWithDevice();
  const stranger = await account(api);
  expectError(t, await post(stranger, device.id, [block(1)]), 403, "FORBIDDEN");
  expectError(t, await post(stranger, randomUUID(), [block(1)]), 404, "DEVICE_NOT_FOUND");
  expectError(t, await post(stranger, "nope", [block(1)]), 404, "DEVICE_NOT_FOUND");
  expectError(t, await api.call("POST", "/v1/events", { device_id: device.id, events: [block(1)] }), 401, "UNAUTHORIZED");
});

test("GET /v1/events: filters by device, enrollment, type, from and to; pages clamped to 1..200; a bad type 400", async (t) => {
  const owner = await account(api);
  const a = await registerDevice(api, owner, undefined, "a.local");
  const b = await registerDevice(api, owner, undefined, "b.local");
  await post(owner, a.id, [block(50), block(40), { event_type: "tamper_attempt", timestamp: minutesAgo(30) }]);
  await post(owner, b.id, [block(20), block(10)]);

  const mine = await list(owner);
  t.is(mine.body.total, 5 + 2, "five sent, two enrollment_change");
  t.is(mine.body.page, 1);
  t.is(mine.body.per_page, 50);
  t.is((await list(owner, `?enrollment_id=${b.enrollmentId}&event_type=block`)).body.total, 2);
  t.is((await list(owner, `?device_id=${a.id}&event_type=tamper_attempt`)).body.total, 1);
  const window = await list(owner, `?event_type=block&from=${encodeURIComponent(minutesAgo(45))}&to=${encodeURIComponent(minutesAgo(15))}`);
  t.is(window.body.total, 2, "40 and 20 minutes ago");
  const timestamps = mine.body.data.map((e) => Date.parse(e.timestamp));
  t.deepEqual(
    timestamps,
    [...timestamps].sort((x, y) => y - x),
    "newest first",
  );

  const paged = await list(owner, "?event_type=block&per_page=2&page=2");
  t.is(paged.body.per_page, 2);
  t.is(paged.body.page, 2);
  t.is(paged.body.total, 4);
  t.is(paged.body.data.length, 2);
  t.is((await list(owner, "?per_page=1000")).body.per_page, 200);
  t.is((await list(owner, "?per_page=0")).body.per_page, 1);
  t.is((await list(owner, "?page=0")).body.page, 1);

  expectError(t, await list(owner, "?event_type=explosion"), 400, "VALIDATION_ERROR", "event_type");
  expectError(t, await list(owner, "?from=yesterday"), 400, "VALIDATION_ERROR");
  expectError(t, await list(owner, `?device_id=${randomUUID()}`), 404, "DEVICE_NOT_FOUND");
  expectError(t, await list(owner, `?enrollment_id=${randomUUID()}`), 404, "ENROLLMENT_NOT_FOUND");
  expectError(t, await api.call("GET", "/v1/events"), 401, "UNAUTHORIZED");
});

test("GET /v1/events/summary counts the five types over the caller's devices only", async (t) => {
  const { owner, device } = await ownerWithDevice();
  const other = await ownerWithDevice();
  await post(owner, device.id, [
    block(9),
    block(8),
    { event_type: "bypass_attempt", timestamp: minutesAgo(7) },
    { event_type: "tamper_attempt", timestamp: minutesAgo(6) },
    { event_type: "heartbeat_missed", timestamp: minutesAgo(5) },
  ]);
  await post(other.owner, other.device.id, [block(1), block(1), block(1)]);
  const res = await api.authed(owner.token, "GET", "/v1/events/summary");
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body, { block: 2, bypass_attempt: 1, tamper_attempt: 1, enrollment_change: 1, heartbeat_missed: 1 });
  t.deepEqual((await api.authed(await account(api).then((a) => a.token), "GET", "/v1/events/summary")).body, {
    block: 0,
    bypass_attempt: 0,
    tamper_attempt: 0,
    enrollment_change: 0,
    heartbeat_missed: 0,
  });
});

const changesOf = async (who: Account, deviceId: string) =>
  (await list(who, `?device_id=${deviceId}&event_type=enrollment_change`)).body.data
    .map((e) => e.detail as { from: string; to: string })
    .reverse();

test("every enrollment status change records enrollment_change { from, to }: self through the delay, partner through approval", async (t) => {
  const { owner, device } = await ownerWithDevice();
  const res = await api.authed(owner.token, "POST", `/v1/enrollments/${device.enrollmentId}/unenroll`);
  t.is(res.status, 202, res.text);
  t.deepEqual((await changesOf(owner, device.id)).slice(0, 2), [
    { from: "pending", to: "active" },
    { from: "active", to: "pending_delay" },
  ]);
  // The delay is set in units of 1 s here (48 hours → 48 s is too long): enroll anew with the minimum.
  const quick = await account(api);
  const e = await enrollment(api, quick.token, { tier: "self", unenroll_delay_hours: 1 });
  const quickDevice = await registerDevice(api, quick, e.token);
  t.is((await api.authed(quick.token, "POST", `/v1/enrollments/${e.id}/unenroll`)).status, 202);
  await until(async () => (await changesOf(quick, quickDevice.id)).length === 3, "the worker's completion recorded");
  t.deepEqual(await changesOf(quick, quickDevice.id), [
    { from: "pending", to: "active" },
    { from: "active", to: "pending_delay" },
    { from: "pending_delay", to: "unenrolled" },
  ]);

  const enrollee = await account(api);
  const partner = await account(api);
  await partners(api, enrollee, partner);
  const p = await enrollment(api, enrollee.token, { tier: "partner", partner_account_id: partner.id });
  const partnered = await registerDevice(api, enrollee, p.token);
  t.is((await api.authed(enrollee.token, "POST", `/v1/enrollments/${p.id}/unenroll`)).status, 202);
  t.is((await api.authed(partner.token, "POST", `/v1/enrollments/${p.id}/approve-unenroll`)).status, 200);
  t.deepEqual(await changesOf(enrollee, partnered.id), [
    { from: "pending", to: "active" },
    { from: "active", to: "pending_approval" },
    { from: "pending_approval", to: "unenrolled" },
  ]);
  const summary = await api.authed<Record<string, number>>(enrollee.token, "GET", "/v1/events/summary");
  t.is(summary.body.enrollment_change, 3);
});

test("who reads a device's events: owner, organization member, authority, partner only with detailed access; a stranger 403", async (t) => {
  const { owner, device } = await ownerWithDevice();
  await post(owner, device.id, [block(3)]);
  const partner = await account(api);
  const member = await account(api);
  const stranger = await account(api);
  const linkId = await partners(api, owner, partner);
  await organizationHolding(api, owner, device.id, member);
  const byDevice = `?device_id=${device.id}`;
  const byEnrollment = `?enrollment_id=${device.enrollmentId}`;

  for (const query of [byDevice, byEnrollment]) {
    t.is((await list(owner, query)).status, 200);
    t.is((await list(member, query)).body.total, 2);
    expectError(t, await list(stranger, query), 403, "FORBIDDEN");
    expectError(t, await list(partner, query), 403, "FORBIDDEN");
  }
  // The partner (the invitee) cannot grant itself sight of the owner's devices.
  const self = await api.authed<{ detailed_access: boolean }>(partner.token, "PATCH", `/v1/partners/${linkId}`, { detailed_access: true });
  t.is(self.status, 200, self.text);
  expectError(t, await list(partner, byDevice), 403, "FORBIDDEN");
  // The owner (the inviter, the watched side) grants it.
  const granted = await api.authed<{ detailed_access: boolean; partner_detailed_access: boolean }>(
    owner.token,
    "PATCH",
    `/v1/partners/${linkId}`,
    { detailed_access: true },
  );
  t.is(granted.status, 200, granted.text);
  t.true(granted.body.detailed_access);
  t.true(granted.body.partner_detailed_access);
  t.is((await list(partner, byDevice)).body.total, 2);
  t.is((await list(partner, byEnrollment)).body.total, 2);
  // The partner's own list is its own devices only.
  t.is((await list(partner)).body.total, 0);

  const authority = await account(api, AUTHORITY);
  const enrollee = await account(api);
  const a = await enrollment(api, authority.token, { tier: "authority" });
  const watched = await registerDevice(api, enrollee, a.token);
  t.is((await list(authority, `?device_id=${watched.id}`)).body.total, 1);
  t.is((await list(authority, `?enrollment_id=${a.id}`)).body.total, 1);
  expectError(t, await list(stranger, `?device_id=${watched.id}`), 403, "FORBIDDEN");
});
