// Analytics end to end through the REST front with fetch, over events sent with POST /v1/events
// by devices registered through the real registration path: the time series (zeros in every
// bucket, weeks from Monday, each interval and refusal), trends, summary, heatmap (168 cells),
// the CSV read back with csv-parse, the PDF read back with pdf.js, the organization summary, and
// the visibility matrix (owner, accepted partner with and without detailed access, enrollment
// partner and authority, organization member, stranger 403).
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import test, { type ExecutionContext } from "ava";
import { parse } from "csv-parse/sync";
import { getDocument } from "pdfjs-dist/legacy/build/pdf.mjs";
import { type ErrorBody, freshEmail, protectionClient } from "../support/protection.js";
import { type Account, account, enrollment, organizationHolding, partners, registerDevice } from "../support/protection-seed.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";

const AUTHORITY = freshEmail("authority");
const hour = 3_600_000;
const day = 24 * hour;

let mesh: TestMesh;
let api: ReturnType<typeof protectionClient>;

test.before(async () => {
  mesh = await startTestMesh({
    flags: [
      "--Protection:Passwords:MemoryKiB=8",
      "--Protection:Passwords:Iterations=1",
      "--Protection:RateLimits:Register:Limit=100000",
      "--Protection:RateLimits:LoginPerIp:Limit=100000",
      `--Protection:Authorities=${AUTHORITY}`,
    ],
  });
  api = protectionClient(mesh.frontUrl("protection"));
});

test.after.always(async () => {
  await mesh?.close();
});

interface Point {
  timestamp: string;
  block_count: number;
  tamper_alerts: number;
}

const expectError = (t: ExecutionContext, res: { status: number; body: unknown }, status: number, code: string, field?: string) => {
  t.is(res.status, status, JSON.stringify(res.body));
  t.is((res.body as ErrorBody).error, code, JSON.stringify(res.body));
  if (field) t.true((res.body as ErrorBody).message.includes(field), JSON.stringify(res.body));
};

/** The Monday 00:00 UTC three weeks back (at most 27 days ago: inside MaxAgeDays). */
function mondayWeeksAgo(weeks: number): Date {
  const at = new Date(Date.now() - weeks * 7 * day);
  const midnight = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate());
  const sinceMonday = (new Date(midnight).getUTCDay() + 6) % 7;
  return new Date(midnight - sinceMonday * day);
}

const iso = (at: Date | number) => new Date(at).toISOString().replace(".000Z", "Z");
const q = (params: Record<string, string>) => `?${new URLSearchParams(params).toString()}`;

async function send(owner: Account, deviceId: string, events: { event_type: string; at: Date | number }[]) {
  for (let i = 0; i < events.length; i += 100) {
    const res = await api.authed(owner.token, "POST", "/v1/events", {
      device_id: deviceId,
      events: events
        .slice(i, i + 100)
        .map((e) => ({ event_type: e.event_type, timestamp: iso(e.at), domain: "bet.example", layer: "dns" })),
    });
    if (res.status !== 202) throw new Error(`POST /v1/events answered ${res.status}: ${res.text}`);
  }
}

const repeat = (n: number, event_type: string, at: Date | number) => Array.from({ length: n }, () => ({ event_type, at }));

/** An owner with one device and a known set of events around a Monday three weeks back. */
async function seeded() {
  const owner = await account(api);
  const device = await registerDevice(api, owner, undefined, "kitchen-pc");
  const monday = mondayWeeksAgo(3);
  await send(owner, device.id, [
    ...repeat(3, "block", monday.getTime() + 1 * hour + 5 * 60_000), // Monday 01:05
    ...repeat(2, "block", monday.getTime() + 2 * day + 13 * hour), // Wednesday 13:00
    ...repeat(1, "tamper_attempt", monday.getTime() + 2 * day + 13 * hour + 30 * 60_000),
    ...repeat(1, "bypass_attempt", monday.getTime() + 2 * day + 14 * hour),
    ...repeat(4, "block", monday.getTime() + 8 * day + 22 * hour), // next Tuesday 22:00
  ]);
  return { owner, device, monday };
}

test("timeseries: every bucket of [floor(from), to) with zeros, per hour, day and week from Monday", async (t) => {
  const { owner, device, monday } = await seeded();
  const daily = await api.authed<{ series: Point[] }>(
    owner.token,
    "GET",
    `/v1/analytics/timeseries${q({ device_id: device.id, from: iso(monday.getTime() + 5 * hour), to: iso(monday.getTime() + 10 * day), interval: "1d" })}`,
  );
  t.is(daily.status, 200, daily.text);
  t.is(daily.body.series.length, 10, "from is floored to its day");
  t.deepEqual(daily.body.series[0], { timestamp: iso(monday), block_count: 3, tamper_alerts: 0 });
  t.deepEqual(daily.body.series[1], { timestamp: iso(monday.getTime() + day), block_count: 0, tamper_alerts: 0 });
  t.deepEqual(daily.body.series[2], { timestamp: iso(monday.getTime() + 2 * day), block_count: 2, tamper_alerts: 2 });
  t.deepEqual(daily.body.series[8], { timestamp: iso(monday.getTime() + 8 * day), block_count: 4, tamper_alerts: 0 });
  t.is(
    daily.body.series.reduce((s, p) => s + p.block_count, 0),
    9,
  );

  // Weeks: from a Thursday, the first bucket is that week's Monday.
  const weekly = await api.authed<{ series: Point[] }>(
    owner.token,
    "GET",
    `/v1/analytics/timeseries${q({ from: iso(monday.getTime() + 3 * day + 7 * hour), to: iso(monday.getTime() + 14 * day), interval: "1w" })}`,
  );
  t.is(weekly.status, 200, weekly.text);
  t.deepEqual(weekly.body.series, [
    { timestamp: iso(monday), block_count: 5, tamper_alerts: 2 },
    { timestamp: iso(monday.getTime() + 7 * day), block_count: 4, tamper_alerts: 0 },
  ]);
  t.is(new Date(weekly.body.series[0]!.timestamp).getUTCDay(), 1, "a Monday");

  const hourly = await api.authed<{ series: Point[] }>(
    owner.token,
    "GET",
    `/v1/analytics/timeseries${q({ enrollment_id: device.enrollmentId, from: iso(monday), to: iso(monday.getTime() + day), interval: "1h" })}`,
  );
  t.is(hourly.body.series.length, 24);
  t.is(hourly.body.series[1]!.block_count, 3);
  t.is(hourly.body.series.filter((p) => p.block_count === 0).length, 23);

  // Defaults: the last 30 days by day, ending now (31 buckets once from is floored).
  const defaults = await api.authed<{ series: Point[] }>(owner.token, "GET", "/v1/analytics/timeseries");
  t.is(defaults.status, 200);
  t.is(defaults.body.series.length, 31);
  t.is(
    defaults.body.series.reduce((s, p) => s + p.block_count, 0),
    9,
  );
});

test("timeseries refusals: interval, from ≥ to, more than 10,000 buckets, bad times; unknown device 404, no token 401", async (t) => {
  const { owner } = await ownerOnly();
  const path = (params: Record<string, string>) => `/v1/analytics/timeseries${q(params)}`;
  expectError(t, await api.authed(owner.token, "GET", path({ interval: "5m" })), 400, "VALIDATION_ERROR", "1h, 1d, 1w");
  const now = Date.now();
  expectError(t, await api.authed(owner.token, "GET", path({ from: iso(now), to: iso(now - day) })), 400, "VALIDATION_ERROR", "from");
  expectError(t, await api.authed(owner.token, "GET", path({ from: iso(now), to: iso(now) })), 400, "VALIDATION_ERROR", "from");
  expectError(
    t,
    await api.authed(owner.token, "GET", path({ from: iso(now - 500 * day), interval: "1h" })),
    400,
    "VALIDATION_ERROR",
    "10000",
  );
  expectError(t, await api.authed(owner.token, "GET", path({ from: "last week" })), 400, "VALIDATION_ERROR");
  expectError(t, await api.authed(owner.token, "GET", path({ device_id: randomUUID() })), 404, "DEVICE_NOT_FOUND");
  expectError(t, await api.authed(owner.token, "GET", path({ enrollment_id: randomUUID() })), 404, "ENROLLMENT_NOT_FOUND");
  expectError(t, await api.authed(owner.token, "GET", "/v1/analytics/export/csv?interval=2d"), 400, "VALIDATION_ERROR", "interval");
  expectError(
    t,
    await api.authed(owner.token, "GET", `/v1/analytics/heatmap${q({ from: iso(now), to: iso(now - day) })}`),
    400,
    "VALIDATION_ERROR",
    "from",
  );
  for (const p of ["timeseries", "trends", "summary", "heatmap", "export/csv", "export/pdf", `org/${randomUUID()}/summary`]) {
    expectError(t, await api.call("GET", `/v1/analytics/${p}`), 401, "UNAUTHORIZED");
  }
});

async function ownerOnly() {
  return { owner: await account(api) };
}

test("trends, summary and heatmap", async (t) => {
  const owner = await account(api);
  const device = await registerDevice(api, owner);
  const now = Date.now();
  // 6 blocks in the last 7 days, 4 in the 7 before; 10 in the last 30, 5 in the 30 before.
  await send(owner, device.id, [
    ...repeat(6, "block", now - 2 * day),
    ...repeat(4, "block", now - 10 * day),
    ...repeat(5, "block", now - 40 * day),
    ...repeat(2, "tamper_attempt", now - 1 * day),
  ]);
  const trends = await api.authed(owner.token, "GET", "/v1/analytics/trends");
  t.is(trends.status, 200, trends.text);
  t.deepEqual(trends.body, { block_count_wow: 50, block_count_mom: 100, active_devices: 1 });

  const summary = await api.authed<Record<string, unknown>>(owner.token, "GET", "/v1/analytics/summary");
  t.is(summary.status, 200, summary.text);
  t.like(summary.body, { total_blocks_all_time: 15, active_devices: 1, enrollments_active: 1 });
  t.is(Date.parse(summary.body.last_block_at as string), now - 2 * day);

  const fresh = await account(api);
  t.deepEqual((await api.authed(fresh.token, "GET", "/v1/analytics/trends")).body, {
    block_count_wow: 0,
    block_count_mom: 0,
    active_devices: 0,
  });
  t.deepEqual((await api.authed(fresh.token, "GET", "/v1/analytics/summary")).body, {
    total_blocks_all_time: 0,
    active_devices: 0,
    enrollments_active: 0,
    last_block_at: null,
  });

  const { owner: o2, device: d2, monday } = await seeded();
  const heat = await api.authed<{ heatmap: { day: number; hour: number; count: number }[] }>(
    o2.token,
    "GET",
    `/v1/analytics/heatmap${q({ device_id: d2.id, from: iso(monday), to: iso(monday.getTime() + 14 * day) })}`,
  );
  t.is(heat.status, 200, heat.text);
  t.is(heat.body.heatmap.length, 168);
  t.deepEqual(heat.body.heatmap[0], { day: 0, hour: 0, count: 0 });
  const cell = (d: number, h: number) => heat.body.heatmap.find((c) => c.day === d && c.hour === h)!.count;
  t.is(cell(1, 1), 3, "Monday 01:00");
  t.is(cell(3, 13), 2, "Wednesday 13:00");
  t.is(cell(3, 14), 0, "a bypass attempt is no block");
  t.is(cell(2, 22), 4, "Tuesday 22:00");
  t.is(
    heat.body.heatmap.reduce((s, c) => s + c.count, 0),
    9,
  );
  // Default: the last 30 days.
  t.is(
    (await api.authed<{ heatmap: { count: number }[] }>(o2.token, "GET", "/v1/analytics/heatmap")).body.heatmap.reduce(
      (s, c) => s + c.count,
      0,
    ),
    9,
  );
});

test("export/csv: RFC 4180 read back with csv-parse, a row per point, as an attachment", async (t) => {
  const { owner, device, monday } = await seeded();
  const res = await fetch(
    `${mesh.frontUrl("protection")}/v1/analytics/export/csv${q({ device_id: device.id, from: iso(monday), to: iso(monday.getTime() + 10 * day) })}`,
    { headers: api.bearer(owner.token) },
  );
  t.is(res.status, 200);
  t.regex(res.headers.get("content-type") ?? "", /^text\/csv/);
  t.regex(res.headers.get("content-disposition") ?? "", /^attachment/);
  const text = await res.text();
  t.true(text.startsWith("timestamp,block_count,tamper_alerts\r\n"));
  const rows = parse(text, { columns: true }) as Record<string, string>[];
  t.is(rows.length, 10);
  t.deepEqual(rows[0], { timestamp: iso(monday), block_count: "3", tamper_alerts: "0" });
  t.deepEqual(rows[2], { timestamp: iso(monday.getTime() + 2 * day), block_count: "2", tamper_alerts: "2" });
  t.deepEqual(rows[1], { timestamp: iso(monday.getTime() + day), block_count: "0", tamper_alerts: "0" });
});

const standardFontDataUrl = `${dirname(createRequire(import.meta.url).resolve("pdfjs-dist/package.json"))}/standard_fonts/`;

test("export/pdf: application/pdf whose text pdf.js reads: title, period, totals and the device table", async (t) => {
  const { owner, device, monday } = await seeded();
  const second = await registerDevice(api, owner, undefined, "attic-laptop");
  await send(owner, second.id, repeat(12, "block", monday.getTime() + 3 * day));
  const res = await fetch(
    `${mesh.frontUrl("protection")}/v1/analytics/export/pdf${q({ from: iso(monday), to: iso(monday.getTime() + 14 * day) })}`,
    { headers: api.bearer(owner.token) },
  );
  t.is(res.status, 200);
  t.is(res.headers.get("content-type"), "application/pdf");
  t.regex(res.headers.get("content-disposition") ?? "", /^attachment/);
  const bytes = new Uint8Array(await res.arrayBuffer());
  t.is(Buffer.from(bytes.subarray(0, 5)).toString("latin1"), "%PDF-");
  const doc = await getDocument({ data: bytes, standardFontDataUrl, useSystemFonts: false, isEvalSupported: false }).promise;
  const pages: string[] = [];
  for (let n = 1; n <= doc.numPages; n++) {
    const content = await (await doc.getPage(n)).getTextContent();
    pages.push(content.items.map((item) => ("str" in item ? item.str : "")).join(" "));
  }
  await doc.destroy();
  const text = pages.join(" ");
  t.true(text.includes("Protection report"), text);
  t.true(text.includes(`Period: ${iso(monday)}`), text);
  t.true(text.includes("Blocks: 21"), text);
  t.true(text.includes("Tamper alerts: 2"), text);
  t.true(text.includes("kitchen-pc"), text);
  t.true(text.includes("attic-laptop"), text);
  t.true(text.indexOf("attic-laptop") < text.indexOf("kitchen-pc"), "devices by blocks, most first");
  void device;
});

test("who sees a device's analytics: owner, partners (with or without detailed access), enrollment partner and authority, organization members; a stranger 403", async (t) => {
  const { owner, device } = await seeded();
  const partner = await account(api);
  const member = await account(api);
  const stranger = await account(api);
  const linkId = await partners(api, owner, partner);
  const orgId = await organizationHolding(api, owner, device.id, member);

  const readers: [string, Account][] = [
    ["owner", owner],
    ["partner", partner],
    ["member", member],
  ];
  const scopes: Record<string, string>[] = [{ device_id: device.id }, { enrollment_id: device.enrollmentId }];
  for (const scope of scopes) {
    for (const p of ["timeseries", "trends", "summary", "heatmap", "export/csv", "export/pdf"]) {
      for (const [who, reader] of readers) {
        const res = await api.authed(reader.token, "GET", `/v1/analytics/${p}${q(scope)}`);
        t.is(res.status, 200, `${who} ${p} ${JSON.stringify(scope)}: ${res.text.slice(0, 200)}`);
      }
      expectError(t, await api.authed(stranger.token, "GET", `/v1/analytics/${p}${q(scope)}`), 403, "FORBIDDEN");
    }
  }
  const summary = await api.authed<{ total_blocks_all_time: number }>(
    partner.token,
    "GET",
    `/v1/analytics/summary${q({ device_id: device.id })}`,
  );
  t.is(summary.body.total_blocks_all_time, 9);
  // Without detailed access the partner gets the aggregates and not the events; with it, both.
  expectError(t, await api.authed(partner.token, "GET", `/v1/events${q({ device_id: device.id })}`), 403, "FORBIDDEN");
  t.is((await api.authed(owner.token, "PATCH", `/v1/partners/${linkId}`, { detailed_access: true })).status, 200);
  t.is((await api.authed(partner.token, "GET", `/v1/events${q({ device_id: device.id })}`)).status, 200);
  t.is((await api.authed(owner.token, "PATCH", `/v1/partners/${linkId}`, { detailed_access: false })).status, 200);
  expectError(t, await api.authed(partner.token, "GET", `/v1/events${q({ device_id: device.id })}`), 403, "FORBIDDEN");
  // PATCH refusals: not a side 404, a missing or non-boolean value 400.
  expectError(t, await api.authed(stranger.token, "PATCH", `/v1/partners/${linkId}`, { detailed_access: true }), 404, "PARTNER_NOT_FOUND");
  expectError(
    t,
    await api.authed(owner.token, "PATCH", `/v1/partners/${randomUUID()}`, { detailed_access: true }),
    404,
    "PARTNER_NOT_FOUND",
  );
  expectError(t, await api.authed(owner.token, "PATCH", `/v1/partners/${linkId}`, { detailed_access: "yes" }), 400, "VALIDATION_ERROR");
  expectError(t, await api.authed(owner.token, "PATCH", `/v1/partners/${linkId}`, {}), 400, "VALIDATION_ERROR");
  // Removing the link ends the partner's sight.
  t.is((await api.authed(partner.token, "DELETE", `/v1/partners/${linkId}`)).status, 204);
  expectError(t, await api.authed(partner.token, "GET", `/v1/analytics/summary${q({ device_id: device.id })}`), 403, "FORBIDDEN");

  // The organization's summary: members only; anyone else 404.
  const org = await api.authed(member.token, "GET", `/v1/analytics/org/${orgId}/summary`);
  t.is(org.status, 200, org.text);
  t.like(org.body, { org_id: orgId, device_count: 1, total_blocks_all_time: 9, active_devices: 1, enrollments_active: 1 });
  expectError(t, await api.authed(stranger.token, "GET", `/v1/analytics/org/${orgId}/summary`), 404, "ORGANIZATION_NOT_FOUND");
  expectError(t, await api.authed(member.token, "GET", `/v1/analytics/org/${randomUUID()}/summary`), 404, "ORGANIZATION_NOT_FOUND");
  expectError(t, await api.authed(member.token, "GET", "/v1/analytics/org/nope/summary"), 404, "ORGANIZATION_NOT_FOUND");

  // The partner of a partner-tier enrollment and an authority see its device's analytics.
  const enrollee = await account(api);
  const approver = await account(api);
  await partners(api, approver, enrollee);
  const p = await enrollment(api, enrollee.token, { tier: "partner", partner_account_id: approver.id });
  const partnered = await registerDevice(api, enrollee, p.token);
  await send(enrollee, partnered.id, repeat(2, "block", Date.now() - hour));
  const approverSees = await api.authed<{ total_blocks_all_time: number }>(
    approver.token,
    "GET",
    `/v1/analytics/summary${q({ enrollment_id: p.id })}`,
  );
  t.is(approverSees.status, 200, approverSees.text);
  t.is(approverSees.body.total_blocks_all_time, 2);
  const authority = await account(api, AUTHORITY);
  const a = await enrollment(api, authority.token, { tier: "authority" });
  const watched = await registerDevice(api, enrollee, a.token);
  await send(enrollee, watched.id, repeat(3, "block", Date.now() - hour));
  t.is(
    (await api.authed<{ total_blocks_all_time: number }>(authority.token, "GET", `/v1/analytics/summary${q({ device_id: watched.id })}`))
      .body.total_blocks_all_time,
    3,
  );
  t.is((await api.authed(authority.token, "GET", `/v1/events${q({ device_id: watched.id })}`)).status, 200, "an authority sees the events");
  expectError(t, await api.authed(stranger.token, "GET", `/v1/analytics/trends${q({ device_id: watched.id })}`), 403, "FORBIDDEN");
  // The caller's own scope never holds another's devices.
  t.is(
    (await api.authed<{ total_blocks_all_time: number }>(authority.token, "GET", "/v1/analytics/summary")).body.total_blocks_all_time,
    0,
  );
});
