// Enrollments end to end through the REST front with fetch: the three tiers (partners linked
// through the partners' REST paths), the paged list and
// who sees what, PATCH by the controller only (a self enrollment only tightens), unenroll (a delay
// on self, completed by the worker at eligible_at with a unit of 2 s; an approval otherwise, with
// a mail to the approver), the QR code read back with pngjs + jsqr, POST /v1/enroll/{token}, and
// the unenroll worker completing a request across a restart of the mesh on the same database.
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import test, { type ExecutionContext } from "ava";
import jsqrModule from "jsqr";
import { simpleParser } from "mailparser";
import { PNG } from "pngjs";
import {
  EnrollmentCreatedSchema,
  EnrollmentUnenrolledSchema,
  EnrollmentUnenrollRequestedSchema,
  EnrollmentUpdatedSchema,
} from "../../gen/protection/v1/events_pb.js";
import { createLogger } from "../../services/runtime/logging/index.js";
import { makeCsr, x509 } from "../support/device-csr.js";
import { type EventWatch, type SeenEvent, watchStream } from "../support/event-watch.js";
import { type ErrorBody, freshEmail, protectionClient } from "../support/protection.js";
import { realInfra } from "../support/real-infra.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { createTestDatabaseUrl } from "../support/test-database.js";
import { until } from "../support/until.js";

// jsqr's types describe an ES module; Node loads its CommonJS build, whose exports are the function itself.
const jsQR = jsqrModule as unknown as typeof jsqrModule.default;

const UNIT_SECONDS = 2;
const AUTHORITY = freshEmail("authority");
const PUBLIC_BASE = "http://enroll.example:8081";
const flags = [
  // Every test registers accounts: cheap password hashes keep the two shared cores for the rest.
  "--Protection:Passwords:MemoryKiB=8",
  "--Protection:Passwords:Iterations=1",
  "--Protection:RateLimits:Register:Limit=100000",
  "--Protection:RateLimits:LoginPerIp:Limit=100000",
  `--Protection:Enrollments:UnenrollDelayUnitSeconds=${UNIT_SECONDS}`,
  "--Protection:Enrollments:MinUnenrollDelayHours=1",
  `--Protection:Authorities=${AUTHORITY}`,
  `--Protection:PublicBaseUrl=${PUBLIC_BASE}`,
];

const dataDir = mkdtempSync(join(tmpdir(), "meshwork-enrollments-"));
/** Every line the mesh logs (the access log included), to check that no token reaches them. */
const logLines: string[] = [];
let mesh: TestMesh;
let api: ReturnType<typeof protectionClient>;
let events: EventWatch<SeenEvent>;

test.before(async () => {
  const logger = createLogger({ level: "info", destination: { write: (line: string) => void logLines.push(line) } });
  mesh = await startTestMesh({ dataDir, flags, logger });
  api = protectionClient(mesh.frontUrl("protection"));
  events = await watchStream(mesh, "protection.v1.>", "PROTECTION");
});

test.after.always(async () => {
  await events?.stop();
  await mesh?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

interface Enrollment {
  id: string;
  tier: string;
  status: string;
  device_id: string | null;
  account_id: string | null;
  created_by: string;
  partner_account_id: string | null;
  organization_id: string | null;
  protection: Record<string, boolean>;
  reporting: Record<string, boolean>;
  unenrollment_policy: { type: string; delay_hours: number | null };
  unenroll_requested_at: string | null;
  eligible_at: string | null;
  unenrolled_at: string | null;
  created_at: string;
}

interface Created {
  id: string;
  token: string;
  qr_url: string;
  tier: string;
  status: string;
}

const expectError = (t: ExecutionContext, res: { status: number; body: unknown }, status: number, code: string, field?: string) => {
  t.is(res.status, status, JSON.stringify(res.body));
  t.is((res.body as ErrorBody).error, code, JSON.stringify(res.body));
  if (field) t.regex((res.body as ErrorBody).message, new RegExp(field), JSON.stringify(res.body));
};

async function account(email = freshEmail("enrollee")) {
  const registered = await api.register(email);
  const tokens = await api.login(email);
  return { email, id: registered.account_id, token: tokens.access_token };
}
type Account = Awaited<ReturnType<typeof account>>;

async function create(who: Account, body: object = { tier: "self" }): Promise<Created> {
  const res = await api.authed<Created>(who.token, "POST", "/v1/enrollments", body);
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${res.text}`);
  return res.body;
}

async function registerDevice(who: Account, token: string) {
  const res = await api.authed<{ device_id: string; client_cert: string }>(who.token, "POST", "/v1/devices", {
    enrollment_token: token,
    platform: "macos",
    hostname: "mac",
    agent_version: "1.0.0",
    client_cert_csr: (await makeCsr()).pem,
  });
  if (res.status !== 201) throw new Error(`register answered ${res.status}: ${res.text}`);
  return res.body;
}

/** `a` invites `b` and `b` accepts: accepted partners, through the partners' REST paths. */
async function partners(a: Account, b: Account): Promise<void> {
  const invited = await api.authed(a.token, "POST", "/v1/partners/invite", { email: b.email });
  if (invited.status !== 202) throw new Error(`invite answered ${invited.status}: ${invited.text}`);
  const incoming = await api.authed<{ data: { id: string; direction: string; partner_account_id: string }[] }>(
    b.token,
    "GET",
    "/v1/partners",
  );
  const link = incoming.body.data.find((p) => p.direction === "incoming" && p.partner_account_id === a.id);
  if (!link) throw new Error(`no incoming invitation: ${incoming.text}`);
  const accepted = await api.authed(b.token, "POST", `/v1/partners/${link.id}/accept`);
  if (accepted.status !== 200) throw new Error(`accept answered ${accepted.status}: ${accepted.text}`);
}

const get = (who: Account, id: string) => api.authed<Enrollment>(who.token, "GET", `/v1/enrollments/${id}`);

const eventsOf = <T>(subject: string, schema: Parameters<typeof fromBinary>[0]) =>
  events.seen.filter((e) => e.subject === subject).map((e) => fromBinary(schema, e.data) as unknown as T);

const serialOf = (pem: string) => new X509Certificate(pem).serialNumber.toLowerCase().replace(/^(00)+/, "");

async function crlSerials(): Promise<string[]> {
  const res = await fetch(`${mesh.frontUrl("protection")}/v1/pki/crl`);
  return new x509.X509Crl(new Uint8Array(await res.arrayBuffer())).entries.map((e) => e.serialNumber.toLowerCase().replace(/^(00)+/, ""));
}

/** The text of the .eml files the mail worker wrote (no SMTP relay is configured) to `to`, read with mailparser. */
async function mailTo(to: string): Promise<string[]> {
  const dir = join(dataDir, "mail");
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const mails = await Promise.all(names.map((n) => simpleParser(readFileSync(join(dir, n)))));
  return mails
    .filter((m) => m.to && !Array.isArray(m.to) && m.to.value.some((a) => a.address === to))
    .map((m) => `${m.subject}\n${m.text}`);
}

test("self: 201 with a one-use token and a QR URL; the full enrollment with its defaults; enrollment.created", async (t) => {
  const me = await account();
  const res = await api.authed<Created>(me.token, "POST", "/v1/enrollments", { tier: "self" });
  t.is(res.status, 201, res.text);
  t.deepEqual(Object.keys(res.body).sort(), ["id", "qr_url", "status", "tier", "token"]);
  t.regex(res.body.token, /^enr_[A-Za-z0-9_-]{43}$/);
  t.is(res.body.qr_url, `${PUBLIC_BASE}/v1/enrollments/${res.body.id}/qr`);
  t.is(res.body.tier, "self");
  t.is(res.body.status, "pending");
  const got = await get(me, res.body.id);
  t.is(got.status, 200);
  t.deepEqual(got.body, {
    id: res.body.id,
    tier: "self",
    status: "pending",
    device_id: null,
    account_id: me.id,
    created_by: me.id,
    partner_account_id: null,
    organization_id: null,
    protection: { dns_blocking: true, app_blocking: true, bypass_detection: true },
    reporting: { send_block_events: true, send_tamper_events: true },
    unenrollment_policy: { type: "time_delay", delay_hours: 48 },
    unenroll_requested_at: null,
    eligible_at: null,
    unenrolled_at: null,
    created_at: got.body.created_at,
  });
  const stored = await mesh
    .db!.em()
    .execute<{ token_hash: string }[]>(`select "token_hash" from "protection_enrollment" where "id" = ?`, [res.body.id]);
  t.regex(stored[0]!.token_hash, /^[0-9a-f]{64}$/);
  t.not(stored[0]!.token_hash, res.body.token);
  await until(
    () =>
      eventsOf<{ enrollmentId: string }>("protection.v1.enrollment.created", EnrollmentCreatedSchema).some(
        (e) => e.enrollmentId === res.body.id,
      ),
    "enrollment.created",
  );
  t.false(
    events.seen.some((e) => Buffer.from(e.data).includes(Buffer.from(res.body.token))),
    "no event carries the token",
  );
});

test("create refuses bad input with 400 naming the field, an authority tier from a user with 403", async (t) => {
  const me = await account();
  const stranger = await account();
  const cases: [object, string][] = [
    [{}, "tier"],
    [{ tier: "friend" }, "tier"],
    [{ tier: "self", unenroll_delay_hours: 0 }, "unenroll_delay_hours"],
    [{ tier: "self", unenroll_delay_hours: 73 }, "unenroll_delay_hours"],
    [{ tier: "self", unenroll_delay_hours: "soon" }, "unenroll_delay_hours"],
    [{ tier: "self", partner_account_id: stranger.id }, "partner_account_id"],
    [{ tier: "partner" }, "partner_account_id"],
    [{ tier: "partner", partner_account_id: stranger.id }, "partner_account_id"],
    [{ tier: "partner", partner_account_id: "nobody" }, "partner_account_id"],
    [{ tier: "partner", partner_account_id: me.id }, "partner_account_id"],
    [{ tier: "self", color: "red" }, "color"],
  ];
  for (const [body, field] of cases)
    expectError(t, await api.authed(me.token, "POST", "/v1/enrollments", body), 400, "VALIDATION_ERROR", field);
  await partners(me, stranger);
  expectError(
    t,
    await api.authed(me.token, "POST", "/v1/enrollments", { tier: "partner", partner_account_id: stranger.id, unenroll_delay_hours: 30 }),
    400,
    "VALIDATION_ERROR",
    "unenroll_delay_hours",
  );
  expectError(t, await api.authed(me.token, "POST", "/v1/enrollments", { tier: "authority" }), 403, "FORBIDDEN");
  expectError(t, await api.call("POST", "/v1/enrollments", { tier: "self" }), 401, "UNAUTHORIZED");
  const bounds = await api.authed<Created>(me.token, "POST", "/v1/enrollments", { tier: "self", unenroll_delay_hours: 1 });
  t.is(bounds.status, 201, "the configured minimum (1) is accepted");
});

test("device_id: the caller's device (else 404) without a live enrollment (else 409); it keeps its id on re-registration", async (t) => {
  const me = await account();
  const other = await account();
  const first = await create(me, { tier: "self", unenroll_delay_hours: 1 });
  const device = await registerDevice(me, first.token);
  expectError(
    t,
    await api.authed(other.token, "POST", "/v1/enrollments", { tier: "self", device_id: device.device_id }),
    404,
    "DEVICE_NOT_FOUND",
  );
  expectError(t, await api.authed(me.token, "POST", "/v1/enrollments", { tier: "self", device_id: "nope" }), 404, "DEVICE_NOT_FOUND");
  expectError(
    t,
    await api.authed(me.token, "POST", "/v1/enrollments", { tier: "self", device_id: device.device_id }),
    409,
    "DEVICE_ALREADY_ENROLLED",
  );

  t.is((await api.authed(me.token, "POST", `/v1/enrollments/${first.id}/unenroll`)).status, 202);
  await until(async () => (await get(me, first.id)).body.status === "unenrolled", "the first enrollment unenrolled");
  const again = await create(me, { tier: "self", device_id: device.device_id });
  t.is((await get(me, again.id)).body.device_id, device.device_id);
  expectError(
    t,
    await api.authed(me.token, "POST", "/v1/enrollments", { tier: "self", device_id: device.device_id }),
    409,
    "DEVICE_ALREADY_ENROLLED",
  );
  const registered = await registerDevice(me, again.token);
  t.is(registered.device_id, device.device_id, "the device keeps its id");
  const detail = await api.authed<{ status: string; enrollment_id: string }>(me.token, "GET", `/v1/devices/${device.device_id}`);
  t.is(detail.body.status, "active");
  t.is(detail.body.enrollment_id, again.id);
  const list = await api.authed<{ data: unknown[] }>(me.token, "GET", "/v1/devices");
  t.is(list.body.data.length, 1);
  const serials = await crlSerials();
  t.true(serials.includes(serialOf(device.client_cert)), "the certificate of the unenrollment is revoked");
  t.false(serials.includes(serialOf(registered.client_cert)));
});

test("the paged list shows the enrollee's, the creator's and the approver's enrollments; per_page is clamped", async (t) => {
  const me = await account();
  const partner = await account();
  const stranger = await account();
  await partners(me, partner);
  const mine = [await create(me), await create(me), await create(me, { tier: "partner", partner_account_id: partner.id })];
  const list = await api.authed<{ data: Enrollment[]; page: number; per_page: number; total: number }>(me.token, "GET", "/v1/enrollments");
  t.is(list.status, 200);
  t.deepEqual(Object.keys(list.body).sort(), ["data", "page", "per_page", "total"]);
  t.is(list.body.total, 3);
  t.is(list.body.page, 1);
  t.is(list.body.per_page, 50);
  t.deepEqual(
    list.body.data.map((e) => e.id),
    mine.map((e) => e.id).reverse(),
    "newest first",
  );
  const second = await api.authed<{ data: Enrollment[]; page: number; per_page: number; total: number }>(
    me.token,
    "GET",
    "/v1/enrollments?page=2&per_page=2",
  );
  t.deepEqual([second.body.page, second.body.per_page, second.body.total, second.body.data.length], [2, 2, 3, 1]);
  t.is((await api.authed<{ per_page: number }>(me.token, "GET", "/v1/enrollments?per_page=0")).body.per_page, 1);
  t.is((await api.authed<{ per_page: number }>(me.token, "GET", "/v1/enrollments?per_page=500")).body.per_page, 200);
  expectError(t, await api.authed(me.token, "GET", "/v1/enrollments?page=x"), 400, "VALIDATION_ERROR", "page");

  const seen = await api.authed<{ data: Enrollment[]; total: number }>(partner.token, "GET", "/v1/enrollments");
  t.deepEqual(
    seen.body.data.map((e) => e.id),
    [mine[2]!.id],
    "the partner sees the partner enrollment",
  );
  t.is((await get(partner, mine[2]!.id)).status, 200);
  t.deepEqual((await api.authed<{ total: number }>(stranger.token, "GET", "/v1/enrollments")).body.total, 0);
  expectError(t, await get(stranger, mine[0]!.id), 404, "ENROLLMENT_NOT_FOUND");
  expectError(t, await get(partner, mine[0]!.id), 404, "ENROLLMENT_NOT_FOUND");
  expectError(t, await get(me, "not-a-uuid"), 404, "ENROLLMENT_NOT_FOUND");
});

test("PATCH: a self enrollment tightens only; unenroll_delay_hours is for self; unenrolled is 409", async (t) => {
  const me = await account();
  const stranger = await account();
  const e = await create(me, { tier: "self", unenroll_delay_hours: 30 });
  const path = `/v1/enrollments/${e.id}`;
  const tightened = await api.authed<Enrollment>(me.token, "PATCH", path, { unenroll_delay_hours: 40, protection: { dns_blocking: true } });
  t.is(tightened.status, 200, tightened.text);
  t.is(tightened.body.unenrollment_policy.delay_hours, 40);
  await until(
    () =>
      eventsOf<{ enrollmentId: string; updatedBy: string }>("protection.v1.enrollment.updated", EnrollmentUpdatedSchema).some(
        (x) => x.enrollmentId === e.id && x.updatedBy === me.id,
      ),
    "enrollment.updated",
  );
  expectError(t, await api.authed(me.token, "PATCH", path, { unenroll_delay_hours: 39 }), 403, "FORBIDDEN");
  expectError(t, await api.authed(me.token, "PATCH", path, { protection: { app_blocking: false } }), 403, "FORBIDDEN");
  expectError(t, await api.authed(me.token, "PATCH", path, { reporting: { send_tamper_events: false } }), 403, "FORBIDDEN");
  expectError(t, await api.authed(me.token, "PATCH", path, { unenroll_delay_hours: 73 }), 400, "VALIDATION_ERROR", "unenroll_delay_hours");
  expectError(
    t,
    await api.authed(me.token, "PATCH", path, { protection: { dns_blocking: "yes" } }),
    400,
    "VALIDATION_ERROR",
    "dns_blocking",
  );
  expectError(t, await api.authed(stranger.token, "PATCH", path, { unenroll_delay_hours: 50 }), 404, "ENROLLMENT_NOT_FOUND");
  t.is((await get(me, e.id)).body.protection.app_blocking, true, "refusals changed nothing");

  await registerDevice(me, e.token);
  t.is((await api.authed(me.token, "POST", `${path}/unenroll`)).status, 202);
  await mesh.db!.em().execute(`update "protection_enrollment" set "eligible_at" = now() where "id" = ?`, [e.id]);
  await until(async () => (await get(me, e.id)).body.status === "unenrolled", "unenrolled");
  expectError(t, await api.authed(me.token, "PATCH", path, { unenroll_delay_hours: 50 }), 409, "ENROLLMENT_NOT_ACTIVE");
});

test("PATCH on a partner enrollment: the partner may loosen it, the enrollee may not touch it", async (t) => {
  const me = await account();
  const partner = await account();
  await partners(partner, me);
  const e = await create(me, { tier: "partner", partner_account_id: partner.id });
  const path = `/v1/enrollments/${e.id}`;
  expectError(t, await api.authed(me.token, "PATCH", path, { protection: { dns_blocking: true } }), 403, "FORBIDDEN");
  const loosened = await api.authed<Enrollment>(partner.token, "PATCH", path, {
    protection: { bypass_detection: false },
    reporting: { send_block_events: false },
  });
  t.is(loosened.status, 200, loosened.text);
  t.deepEqual(loosened.body.protection, { dns_blocking: true, app_blocking: true, bypass_detection: false });
  t.deepEqual(loosened.body.reporting, { send_block_events: false, send_tamper_events: true });
  t.deepEqual(loosened.body.unenrollment_policy, { type: "partner_approval", delay_hours: null });
  expectError(
    t,
    await api.authed(partner.token, "PATCH", path, { unenroll_delay_hours: 30 }),
    400,
    "VALIDATION_ERROR",
    "unenroll_delay_hours",
  );
});

test("self unenroll: 202 pending_delay, completed by the worker at eligible_at; the device unenrolled and revoked", async (t) => {
  const me = await account();
  const partner = await account();
  await partners(me, partner);
  const e = await create(me, { tier: "self", unenroll_delay_hours: 2 });
  const path = `/v1/enrollments/${e.id}`;
  expectError(t, await api.authed(me.token, "POST", `${path}/unenroll`), 409, "ENROLLMENT_NOT_ACTIVE", undefined);
  const device = await registerDevice(me, e.token);
  const res = await api.authed<{ status: string; eligible_at: string; message: string | null }>(me.token, "POST", `${path}/unenroll`);
  t.is(res.status, 202, res.text);
  t.is(res.body.status, "pending_delay");
  t.is(res.body.message, null);
  const eligible = new Date(res.body.eligible_at).getTime();
  expectError(t, await api.authed(me.token, "POST", `${path}/unenroll`), 409, "ALREADY_UNENROLLING");
  expectError(t, await api.authed(me.token, "POST", `${path}/approve-unenroll`), 409, "NO_PENDING_REQUEST");
  const pending = await get(me, e.id);
  t.is(pending.body.status, "pending_delay");
  t.is(pending.body.eligible_at, res.body.eligible_at);
  t.is(eligible - new Date(pending.body.unenroll_requested_at!).getTime(), 2 * UNIT_SECONDS * 1000, "2 hours of 2 s after the request");

  const done = await until(async () => {
    const got = (await get(me, e.id)).body;
    return got.status === "unenrolled" && got;
  }, "the worker completing the unenrollment");
  t.true(new Date(done.unenrolled_at!).getTime() >= eligible, "not before eligible_at");
  t.true(new Date(done.unenrolled_at!).getTime() < eligible + 6000, "within the worker's 5 s poll");
  const detail = await api.authed<{ status: string }>(me.token, "GET", `/v1/devices/${device.device_id}`);
  t.is(detail.body.status, "unenrolled");
  const config = await api.authed<{ protection: object; reporting: object }>(me.token, "GET", `/v1/devices/${device.device_id}/config`);
  t.deepEqual(config.body.protection, { dns_blocking: false, app_blocking: false, bypass_detection: false });
  t.deepEqual(config.body.reporting, { send_block_events: false, send_tamper_events: false });
  const beat = await api.authed<{ commands: string[] }>(me.token, "POST", `/v1/devices/${device.device_id}/heartbeat`, {
    status: "ok",
    blocklist_version: 0,
    agent_version: "1.0.0",
    integrity_ok: true,
  });
  t.deepEqual(beat.body.commands, ["unenroll"]);
  t.true((await crlSerials()).includes(serialOf(device.client_cert)));
  const renew = await api.authed(me.token, "POST", `/v1/devices/${device.device_id}/renew-certificate`, {
    client_cert_csr: (await makeCsr()).pem,
  });
  expectError(t, renew, 409, "ENROLLMENT_NOT_ACTIVE");
  expectError(t, await api.authed(me.token, "POST", `${path}/unenroll`), 409, "ENROLLMENT_NOT_ACTIVE");
  await until(
    () =>
      eventsOf<{ enrollmentId: string; status: string }>(
        "protection.v1.enrollment.unenroll_requested",
        EnrollmentUnenrollRequestedSchema,
      ).some((x) => x.enrollmentId === e.id && x.status === "pending_delay") &&
      eventsOf<{ enrollmentId: string; reason: string }>("protection.v1.enrollment.unenrolled", EnrollmentUnenrolledSchema).filter(
        (x) => x.enrollmentId === e.id && x.reason === "time_delay",
      ).length === 1,
    "unenroll_requested and one unenrolled event",
  );
});

test("partner unenroll: 202 pending_approval with a mail to the partner; only the partner approves", async (t) => {
  const me = await account();
  const partner = await account();
  const stranger = await account();
  await partners(me, partner);
  const e = await create(me, { tier: "partner", partner_account_id: partner.id });
  const path = `/v1/enrollments/${e.id}`;
  const device = await registerDevice(me, e.token);
  expectError(t, await api.authed(partner.token, "POST", `${path}/unenroll`), 403, "FORBIDDEN");
  expectError(t, await api.authed(stranger.token, "POST", `${path}/unenroll`), 404, "ENROLLMENT_NOT_FOUND");
  expectError(t, await api.authed(partner.token, "POST", `${path}/approve-unenroll`), 409, "NO_PENDING_REQUEST");
  const res = await api.authed<{ status: string; eligible_at: string | null; message: string }>(me.token, "POST", `${path}/unenroll`);
  t.is(res.status, 202, res.text);
  t.is(res.body.status, "pending_approval");
  t.is(res.body.eligible_at, null);
  t.is(typeof res.body.message, "string");
  expectError(t, await api.authed(me.token, "POST", `${path}/unenroll`), 409, "ALREADY_UNENROLLING");
  const request = await until(async () => (await mailTo(partner.email)).find((m) => m.includes(e.id)), "the request mail to the partner");
  t.regex(request, /asked to leave/);
  t.regex(request, new RegExp(`/v1/enrollments/${e.id}/approve-unenroll`));
  t.false(
    (await mailTo(me.email)).some((m) => m.includes(e.id)),
    "no request mail to the enrollee",
  );

  expectError(t, await api.authed(me.token, "POST", `${path}/approve-unenroll`), 403, "FORBIDDEN");
  expectError(t, await api.authed(stranger.token, "POST", `${path}/approve-unenroll`), 404, "ENROLLMENT_NOT_FOUND");
  const approved = await api.authed(partner.token, "POST", `${path}/approve-unenroll`);
  t.is(approved.status, 200, approved.text);
  t.deepEqual(approved.body, { status: "unenrolled" });
  expectError(t, await api.authed(partner.token, "POST", `${path}/approve-unenroll`), 409, "NO_PENDING_REQUEST");
  t.is((await get(me, e.id)).body.status, "unenrolled");
  t.is((await api.authed<{ status: string }>(me.token, "GET", `/v1/devices/${device.device_id}`)).body.status, "unenrolled");
  t.true((await crlSerials()).includes(serialOf(device.client_cert)));
  await until(
    () =>
      eventsOf<{ enrollmentId: string; reason: string; approvedBy: string }>(
        "protection.v1.enrollment.unenrolled",
        EnrollmentUnenrolledSchema,
      ).some((x) => x.enrollmentId === e.id && x.reason === "approved" && x.approvedBy === partner.id),
    "enrollment.unenrolled (approved)",
  );
});

test("authority: created by an authority, redeemed by anyone, who becomes the enrollee; the authority approves", async (t) => {
  const authority = await account(AUTHORITY);
  const enrollee = await account();
  const e = await create(authority, { tier: "authority" });
  const pending = await get(authority, e.id);
  t.is(pending.body.account_id, null);
  t.is(pending.body.partner_account_id, authority.id);
  t.deepEqual(pending.body.unenrollment_policy, { type: "authority_approval", delay_hours: null });
  expectError(t, await get(enrollee, e.id), 404, "ENROLLMENT_NOT_FOUND");
  const device = await registerDevice(enrollee, e.token);
  const active = await get(enrollee, e.id);
  t.is(active.body.status, "active");
  t.is(active.body.account_id, enrollee.id);
  t.is(active.body.created_by, authority.id);
  t.is(active.body.device_id, device.device_id);
  t.deepEqual(
    (await api.authed<{ data: Enrollment[] }>(authority.token, "GET", "/v1/enrollments")).body.data.map((x) => x.id),
    [e.id],
  );
  expectError(t, await api.authed(authority.token, "GET", `/v1/devices/${device.device_id}`), 404, "DEVICE_NOT_FOUND");
  expectError(
    t,
    await api.authed(enrollee.token, "PATCH", `/v1/enrollments/${e.id}`, { protection: { dns_blocking: true } }),
    403,
    "FORBIDDEN",
  );
  t.is((await api.authed(authority.token, "PATCH", `/v1/enrollments/${e.id}`, { protection: { app_blocking: false } })).status, 200);
  t.is((await api.authed(enrollee.token, "POST", `/v1/enrollments/${e.id}/unenroll`)).status, 202);
  await until(async () => (await mailTo(authority.email)).some((m) => m.includes(e.id)), "the request mail to the authority");
  expectError(t, await api.authed(enrollee.token, "POST", `/v1/enrollments/${e.id}/approve-unenroll`), 403, "FORBIDDEN");
  t.is((await api.authed(authority.token, "POST", `/v1/enrollments/${e.id}/approve-unenroll`)).status, 200);
  t.is((await get(enrollee, e.id)).body.status, "unenrolled");
});

test("QR: a PNG of <PublicBaseUrl>/v1/enroll/<token> for the creator while pending; 404 TOKEN_NOT_FOUND once redeemed", async (t) => {
  const me = await account();
  const partner = await account();
  const stranger = await account();
  await partners(me, partner);
  const e = await create(me, { tier: "partner", partner_account_id: partner.id });
  const res = await fetch(e.qr_url.replace(PUBLIC_BASE, mesh.frontUrl("protection")), { headers: { authorization: `Bearer ${me.token}` } });
  t.is(res.status, 200);
  t.is(res.headers.get("content-type"), "image/png");
  t.is(res.headers.get("cache-control"), "no-store");
  const image = PNG.sync.read(Buffer.from(await res.arrayBuffer()));
  const pixels = new Uint8ClampedArray(image.data.buffer, image.data.byteOffset, image.data.byteLength);
  t.is(jsQR(pixels, image.width, image.height)?.data, `${PUBLIC_BASE}/v1/enroll/${e.token}`);
  expectError(t, await api.authed(partner.token, "GET", `/v1/enrollments/${e.id}/qr`), 403, "FORBIDDEN");
  expectError(t, await api.authed(stranger.token, "GET", `/v1/enrollments/${e.id}/qr`), 404, "ENROLLMENT_NOT_FOUND");
  expectError(t, await api.call("GET", `/v1/enrollments/${e.id}/qr`), 401, "UNAUTHORIZED");
  await registerDevice(me, e.token);
  expectError(t, await api.authed(me.token, "GET", `/v1/enrollments/${e.id}/qr`), 404, "TOKEN_NOT_FOUND");
});

test("POST /v1/enroll/{token}: 201 with the device and the enrollment in full; the token's refusals as on /v1/devices", async (t) => {
  const me = await account();
  const other = await account();
  const e = await create(me);
  const body = { platform: "android", hostname: "phone", agent_version: "3.1.0", client_cert_csr: (await makeCsr("p256")).pem };
  expectError(
    t,
    await api.authed(me.token, "POST", `/v1/enroll/${e.token}`, { ...body, hostname: "" }),
    400,
    "VALIDATION_ERROR",
    "hostname",
  );
  expectError(
    t,
    await api.authed(me.token, "POST", `/v1/enroll/${e.token}`, { ...body, enrollment_token: e.token }),
    400,
    "VALIDATION_ERROR",
    "enrollment_token",
  );
  expectError(t, await api.authed(other.token, "POST", `/v1/enroll/${e.token}`, body), 403, "FORBIDDEN");
  expectError(t, await api.authed(me.token, "POST", `/v1/enroll/enr_${"x".repeat(43)}`, body), 404, "TOKEN_NOT_FOUND");
  expectError(t, await api.authed(me.token, "POST", "/v1/enroll/otk_unknown", body), 404, "TOKEN_NOT_FOUND");
  const res = await api.authed<{
    device: Record<string, unknown>;
    enrollment: Enrollment;
    client_cert: string;
    ca_cert: string;
    blocklist_version: number;
    config: Record<string, unknown>;
  }>(me.token, "POST", `/v1/enroll/${e.token}`, body);
  t.is(res.status, 201, res.text);
  t.deepEqual(Object.keys(res.body).sort(), ["blocklist_version", "ca_cert", "client_cert", "config", "device", "enrollment"]);
  t.is(res.body.enrollment.id, e.id);
  t.is(res.body.enrollment.status, "active");
  t.is(res.body.enrollment.device_id, res.body.device.id as string);
  t.is(res.body.device.platform, "android");
  t.is(res.body.device.account_id, me.id);
  t.is(res.body.device.certificate_serial, serialOf(res.body.client_cert));
  t.true(new X509Certificate(res.body.client_cert).verify(new X509Certificate(res.body.ca_cert).publicKey));
  t.deepEqual(
    (await api.authed(me.token, "GET", `/v1/devices/${res.body.device.id as string}`)).body,
    res.body.device,
    "the device as its detail shows it",
  );
  t.is(res.body.blocklist_version, 0);
  t.is(res.body.config.heartbeat_interval_secs, 300);
  expectError(t, await api.authed(me.token, "POST", `/v1/enroll/${e.token}`, body), 409, "DEVICE_ALREADY_ENROLLED");
  await until(() => logLines.some((l) => l.includes('"path":"/v1/enroll/{token}"')), "the access log line of /v1/enroll");
  t.false(
    logLines.some((l) => l.includes(e.token)),
    "the token in the path is logged as the route's template",
  );
});

test("the unenroll worker completes a pending_delay request across a restart of the mesh on the same database", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "meshwork-unenroll-restart-"));
  const infra = realInfra();
  const db = infra.databaseUrl ? await createTestDatabaseUrl(infra.databaseUrl) : undefined;
  const start = () => startTestMesh({ dataDir: dir, flags, ...(db ? { databaseUrl: db.url } : {}) });
  let current: TestMesh | undefined = await start();
  t.teardown(async () => {
    await current?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  const client = protectionClient(current.frontUrl("protection"));
  const email = freshEmail("restart");
  await client.register(email);
  const token = (await client.login(email)).access_token;
  const created = await client.authed<Created>(token, "POST", "/v1/enrollments", { tier: "self", unenroll_delay_hours: 3 });
  const device = await client.authed<{ device_id: string }>(token, "POST", "/v1/devices", {
    enrollment_token: created.body.token,
    platform: "ios",
    hostname: "pad",
    agent_version: "1.0.0",
    client_cert_csr: (await makeCsr()).pem,
  });
  t.is(device.status, 201, device.text);
  const requested = await client.authed<{ eligible_at: string }>(token, "POST", `/v1/enrollments/${created.body.id}/unenroll`);
  t.is(requested.status, 202);
  const caBefore = await (await fetch(`${current.frontUrl("protection")}/v1/pki/ca.pem`)).text();
  await current.close();
  current = undefined;

  current = await start();
  const after = protectionClient(current.frontUrl("protection"));
  const done = await until(async () => {
    const got = await after.authed<Enrollment>(token, "GET", `/v1/enrollments/${created.body.id}`);
    return got.body.status === "unenrolled" && got.body;
  }, "the restarted mesh completing the unenrollment");
  t.true(new Date(done.unenrolled_at!).getTime() >= new Date(requested.body.eligible_at).getTime());
  const detail = await after.authed<{ status: string }>(token, "GET", `/v1/devices/${device.body.device_id}`);
  t.is(detail.body.status, "unenrolled");
  const caAfter = await (await fetch(`${current.frontUrl("protection")}/v1/pki/ca.pem`)).text();
  t.is(caAfter, caBefore, "the generated CA is kept in PostgreSQL");
});

test("two instances on one database complete each due unenrollment exactly once", async (t) => {
  // On real PostgreSQL both instances run at once and race for the same rows; the embedded
  // PostgreSQL belongs to one process, so there one instance does the work (still exactly once).
  const infra = realInfra();
  const db = infra.databaseUrl ? await createTestDatabaseUrl(infra.databaseUrl) : undefined;
  const meshes: TestMesh[] = [];
  t.teardown(async () => {
    for (const m of meshes.reverse()) await m.close();
    await db?.drop();
  });
  meshes.push(await startTestMesh({ flags, ...(db ? { databaseUrl: db.url } : {}) }));
  if (db) meshes.push(await startTestMesh({ flags, databaseUrl: db.url }));
  const clients = meshes.map((m) => protectionClient(m.frontUrl("protection")));
  const email = freshEmail("race");
  await clients[0]!.register(email);
  const token = (await clients[0]!.login(email)).access_token;
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const client = clients[i % clients.length]!;
    const created = await client.authed<Created>(token, "POST", "/v1/enrollments", { tier: "self", unenroll_delay_hours: 1 });
    const device = await client.authed(token, "POST", "/v1/devices", {
      enrollment_token: created.body.token,
      platform: "linux",
      hostname: `race-${i}`,
      agent_version: "1.0.0",
      client_cert_csr: (await makeCsr()).pem,
    });
    t.is(device.status, 201, device.text);
    ids.push(created.body.id);
  }
  await Promise.all(ids.map((id, i) => clients[i % clients.length]!.authed(token, "POST", `/v1/enrollments/${id}/unenroll`)));
  await until(async () => {
    const list = await clients[0]!.authed<{ data: Enrollment[] }>(token, "GET", "/v1/enrollments");
    return list.body.data.filter((e) => e.status === "unenrolled").length === ids.length;
  }, "every unenrollment completed");
  const [row] = await meshes[0]!
    .db!.em()
    .execute<{ n: string | number }[]>(
      `select count(*) as "n" from "outbox_event" where "subject" = 'protection.v1.enrollment.unenrolled'`,
    );
  t.is(Number(row!.n), ids.length, "one enrollment.unenrolled per enrollment");
});
