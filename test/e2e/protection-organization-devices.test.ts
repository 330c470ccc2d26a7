// Devices of organizations end to end through the REST front with fetch: assigning a device of
// the caller or of a member, listing, unassigning, each refusal (403 against 404), two
// organizations assigning one device at once, the deletion of an organization (devices
// unassigned, enrollments kept and still leavable), and registration with an organization's
// token at POST /v1/enroll/{token}: the enrollment of the organization, the device assigned, uses
// counted under concurrency, exhausted and revoked tokens, and who controls the enrollment. Events
// read from the PROTECTION stream; no token in any log line.
import { X509Certificate } from "node:crypto";
import { type DescMessage, fromBinary } from "@bufbuild/protobuf";
import test, { type ExecutionContext } from "ava";
import {
  EnrollmentActivatedSchema,
  EnrollmentCreatedSchema,
  EnrollmentUpdatedSchema,
  OrganizationDeviceAssignedSchema,
  OrganizationDeviceUnassignedSchema,
  OrganizationTokenRedeemedSchema,
} from "../../gen/protection/v1/events_pb.js";
import { createLogger } from "../../services/runtime/logging/index.js";
import { makeCsr } from "../support/device-csr.js";
import { type EventWatch, type SeenEvent, watchStream } from "../support/event-watch.js";
import { type ErrorBody, freshEmail, protectionClient } from "../support/protection.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

const flags = [
  // Every test registers accounts: cheap password hashes keep the two shared cores for the rest.
  "--Protection:Passwords:MemoryKiB=8",
  "--Protection:Passwords:Iterations=1",
  "--Protection:RateLimits:Register:Limit=100000",
  "--Protection:RateLimits:LoginPerIp:Limit=100000",
];

/** Every line the mesh logs (the access log included), to check that no token reaches them. */
const logLines: string[] = [];
let mesh: TestMesh;
let api: ReturnType<typeof protectionClient>;
let events: EventWatch<SeenEvent>;

test.before(async () => {
  const logger = createLogger({ level: "info", destination: { write: (line: string) => void logLines.push(line) } });
  mesh = await startTestMesh({ flags, logger });
  api = protectionClient(mesh.frontUrl("protection"));
  events = await watchStream(mesh, "protection.v1.>", "PROTECTION");
});

test.after.always(async () => {
  await events?.stop();
  await mesh?.close();
});

type T = ExecutionContext;

interface OrgDevice {
  id: string;
  hostname: string;
  platform: string;
  status: string;
  last_heartbeat: string | null;
  enrollment_id: string;
  agent_version: string;
  account_id: string;
  assigned_at: string;
}

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
  unenrollment_policy: { type: string; delay_hours: number | null };
}

interface Enrolled {
  device: Record<string, unknown> & { id: string; organization_id: string | null; account_id: string; enrollment_id: string };
  enrollment: Enrollment;
  client_cert: string;
  ca_cert: string;
  blocklist_version: number;
  config: Record<string, unknown>;
}

function expectError(t: T, res: { status: number; body: unknown }, status: number, code: string, message?: RegExp) {
  t.is(res.status, status, JSON.stringify(res.body));
  t.is((res.body as ErrorBody).error, code, JSON.stringify(res.body));
  t.is(typeof (res.body as ErrorBody).message, "string");
  if (message) t.regex((res.body as ErrorBody).message, message, JSON.stringify(res.body));
}

async function account(label = "user") {
  const email = freshEmail(label);
  const registered = await api.register(email);
  const tokens = await api.login(email);
  return { email, id: registered.account_id, token: tokens.access_token };
}
type Account = Awaited<ReturnType<typeof account>>;

async function organization(owner: Account, name = "Acme Schools"): Promise<{ id: string }> {
  const res = await api.authed<{ id: string }>(owner.token, "POST", "/v1/organizations", { name });
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${res.text}`);
  return res.body;
}

async function addMember(by: Account, orgId: string, who: Account, role: string): Promise<void> {
  const res = await api.authed(by.token, "POST", `/v1/organizations/${orgId}/members`, { email: who.email, role });
  if (res.status !== 201) throw new Error(`add member answered ${res.status}: ${res.text}`);
}

/** A device of `who`, registered with a self enrollment's token at POST /v1/devices. */
async function device(who: Account, hostname = "laptop"): Promise<string> {
  const created = await api.authed<{ token: string }>(who.token, "POST", "/v1/enrollments", { tier: "self" });
  if (created.status !== 201) throw new Error(`enrollment answered ${created.status}: ${created.text}`);
  const res = await api.authed<{ device_id: string }>(who.token, "POST", "/v1/devices", {
    enrollment_token: created.body.token,
    platform: "linux",
    hostname,
    agent_version: "1.0.0",
    client_cert_csr: (await makeCsr()).pem,
  });
  if (res.status !== 201) throw new Error(`register answered ${res.status}: ${res.text}`);
  return res.body.device_id;
}

async function orgToken(by: Account, orgId: string, tier: string, maxUses = 10): Promise<{ id: string; token: string }> {
  const res = await api.authed<{ id: string; token: string }>(by.token, "POST", `/v1/organizations/${orgId}/tokens`, {
    label: `${tier} laptops`,
    tier,
    max_uses: maxUses,
  });
  if (res.status !== 201) throw new Error(`token answered ${res.status}: ${res.text}`);
  return res.body;
}

async function enrollBody() {
  return { platform: "windows", hostname: "desk-01", agent_version: "2.0.0", client_cert_csr: (await makeCsr("p256")).pem };
}

async function enroll(who: Account, token: string): Promise<Enrolled> {
  const res = await api.authed<Enrolled>(who.token, "POST", `/v1/enroll/${token}`, await enrollBody());
  if (res.status !== 201) throw new Error(`enroll answered ${res.status}: ${res.text}`);
  return res.body;
}

const devicesPath = (orgId: string) => `/v1/organizations/${orgId}/devices`;

async function orgDevices(by: Account, orgId: string): Promise<OrgDevice[]> {
  const res = await api.authed<{ data: OrgDevice[] }>(by.token, "GET", devicesPath(orgId));
  if (res.status !== 200) throw new Error(`list answered ${res.status}: ${res.text}`);
  return res.body.data;
}

async function organizationOf(who: Account, deviceId: string): Promise<string | null> {
  const res = await api.authed<{ organization_id: string | null }>(who.token, "GET", `/v1/devices/${deviceId}`);
  if (res.status !== 200) throw new Error(`device answered ${res.status}: ${res.text}`);
  return res.body.organization_id;
}

/** The decoded events of one type seen so far, with a field equal to `value`. */
function eventsOf<D extends DescMessage>(schema: D, field: string, value: string) {
  return events.seen
    .filter((e) => e.subject.endsWith(`.${subjectTail(schema)}`))
    .map((e) => fromBinary(schema, e.data) as unknown as Record<string, unknown>)
    .filter((m) => m[field] === value);
}

function subjectTail(schema: DescMessage): string {
  const tails: Record<string, string> = {
    "protection.v1.OrganizationDeviceAssigned": "organization.device_assigned",
    "protection.v1.OrganizationDeviceUnassigned": "organization.device_unassigned",
    "protection.v1.OrganizationTokenRedeemed": "organization.token_redeemed",
    "protection.v1.EnrollmentCreated": "enrollment.created",
    "protection.v1.EnrollmentActivated": "enrollment.activated",
    "protection.v1.EnrollmentUpdated": "enrollment.updated",
  };
  return tails[schema.typeName]!;
}

test("assign, list, unassign: owners and admins, a device of the caller or of an active member; each refusal", async (t) => {
  const owner = await account("owner");
  const admin = await account("admin");
  const member = await account("member");
  const outsider = await account("outsider");
  const org = await organization(owner);
  await addMember(owner, org.id, admin, "admin");
  await addMember(owner, org.id, member, "member");
  const ownerDevice = await device(owner, "owner-laptop");
  const memberDevice = await device(member, "member-phone");
  const outsiderDevice = await device(outsider, "outsider-pc");
  const path = devicesPath(org.id);

  // An admin assigns a member's device: 201, the list item with its owner and the time.
  const assigned = await api.authed<OrgDevice>(admin.token, "POST", path, { device_id: memberDevice });
  t.is(assigned.status, 201, assigned.text);
  t.deepEqual(Object.keys(assigned.body).sort(), [
    "account_id",
    "agent_version",
    "assigned_at",
    "enrollment_id",
    "hostname",
    "id",
    "last_heartbeat",
    "platform",
    "status",
  ]);
  t.is(assigned.body.id, memberDevice);
  t.is(assigned.body.account_id, member.id);
  t.is(assigned.body.hostname, "member-phone");
  t.is(assigned.body.status, "active");
  t.is(assigned.body.last_heartbeat, null);
  t.true(Math.abs(Date.parse(assigned.body.assigned_at) - Date.now()) < 60_000);
  t.is(await organizationOf(member, memberDevice), org.id, "the device's detail names the organization");

  // The owner assigns their own device.
  t.is((await api.authed(owner.token, "POST", path, { device_id: ownerDevice })).status, 201);

  // Any member lists them, oldest assignment first.
  const listed = await orgDevices(member, org.id);
  t.deepEqual(
    listed.map((d) => d.id),
    [memberDevice, ownerDevice],
  );
  t.deepEqual(listed[0], assigned.body);

  // Refusals of the assignment.
  expectError(
    t,
    await api.authed(admin.token, "POST", path, { device_id: memberDevice }),
    409,
    "DEVICE_ALREADY_ASSIGNED",
    /this organization/,
  );
  expectError(t, await api.authed(admin.token, "POST", path, { device_id: outsiderDevice }), 404, "DEVICE_NOT_FOUND");
  expectError(
    t,
    await api.authed(admin.token, "POST", path, { device_id: "019a0000-0000-7000-8000-000000000000" }),
    404,
    "DEVICE_NOT_FOUND",
  );
  expectError(t, await api.authed(admin.token, "POST", path, { device_id: "not-a-uuid" }), 404, "DEVICE_NOT_FOUND");
  expectError(t, await api.authed(admin.token, "POST", path, { device_id: "" }), 400, "VALIDATION_ERROR", /device_id/);
  expectError(t, await api.authed(admin.token, "POST", path, {}), 400, "VALIDATION_ERROR", /device_id/);
  expectError(t, await api.authed(admin.token, "POST", path, { device_id: 7 }), 400, "VALIDATION_ERROR", /device_id/);
  expectError(t, await api.authed(member.token, "POST", path, { device_id: memberDevice }), 403, "FORBIDDEN");
  t.is((await orgDevices(owner, org.id)).length, 2, "the refusals changed nothing");

  // Held by another organization.
  const other = await organization(outsider, "Other Org");
  await addMember(outsider, other.id, member, "member");
  expectError(
    t,
    await api.authed(outsider.token, "POST", devicesPath(other.id), { device_id: memberDevice }),
    409,
    "DEVICE_ALREADY_ASSIGNED",
    /another organization/,
  );
  t.is((await api.authed(outsider.token, "POST", devicesPath(other.id), { device_id: outsiderDevice })).status, 201);

  // Outsiders: 404 ORGANIZATION_NOT_FOUND whatever they ask, as for an unknown organization.
  expectError(t, await api.authed(outsider.token, "GET", path), 404, "ORGANIZATION_NOT_FOUND");
  expectError(t, await api.authed(outsider.token, "POST", path, { device_id: outsiderDevice }), 404, "ORGANIZATION_NOT_FOUND");
  expectError(t, await api.authed(outsider.token, "DELETE", `${path}/${memberDevice}`), 404, "ORGANIZATION_NOT_FOUND");
  expectError(t, await api.authed(owner.token, "GET", devicesPath("019a0000-0000-7000-8000-000000000000")), 404, "ORGANIZATION_NOT_FOUND");
  expectError(t, await api.authed(owner.token, "GET", devicesPath("nope")), 404, "ORGANIZATION_NOT_FOUND");
  t.is((await api.call("GET", path)).status, 401);

  // Unassigning: admins and owners; a plain member gets 403; a device not assigned here is 404.
  expectError(t, await api.authed(member.token, "DELETE", `${path}/${memberDevice}`), 403, "FORBIDDEN");
  expectError(t, await api.authed(admin.token, "DELETE", `${path}/${outsiderDevice}`), 404, "DEVICE_NOT_FOUND");
  expectError(t, await api.authed(admin.token, "DELETE", `${path}/not-a-uuid`), 404, "DEVICE_NOT_FOUND");
  t.is((await api.authed(admin.token, "DELETE", `${path}/${memberDevice}`)).status, 204);
  expectError(t, await api.authed(admin.token, "DELETE", `${path}/${memberDevice}`), 404, "DEVICE_NOT_FOUND");
  t.is(await organizationOf(member, memberDevice), null);
  t.deepEqual(
    (await orgDevices(member, org.id)).map((d) => d.id),
    [ownerDevice],
  );
  t.is(await organizationOf(outsider, outsiderDevice), other.id, "the other organization's device stays");

  // Once unassigned, another organization may take it.
  t.is((await api.authed(outsider.token, "POST", devicesPath(other.id), { device_id: memberDevice })).status, 201);

  const assignedEvents = await until(() => {
    const found = eventsOf(OrganizationDeviceAssignedSchema, "deviceId", memberDevice);
    return found.length === 2 && found;
  }, "two device_assigned of the member's device");
  t.like(assignedEvents[0], { organizationId: org.id, accountId: member.id, assignedByAccountId: admin.id, tokenId: "" });
  t.like(assignedEvents[1], { organizationId: other.id, assignedByAccountId: outsider.id });
  const [unassigned] = await until(() => {
    const found = eventsOf(OrganizationDeviceUnassignedSchema, "deviceId", memberDevice);
    return found.length === 1 && found;
  }, "the device_unassigned of the member's device");
  t.like(unassigned, { organizationId: org.id, accountId: member.id, unassignedByAccountId: admin.id, reason: "unassigned" });
});

test("deleting an assigned device records its unassignment", async (t) => {
  const owner = await account("owner");
  const org = await organization(owner);
  const id = await device(owner);
  t.is((await api.authed(owner.token, "POST", devicesPath(org.id), { device_id: id })).status, 201);
  t.is((await api.authed(owner.token, "DELETE", `/v1/devices/${id}`)).status, 204);
  t.deepEqual(await orgDevices(owner, org.id), []);
  const [unassigned] = await until(() => {
    const found = eventsOf(OrganizationDeviceUnassignedSchema, "deviceId", id);
    return found.length === 1 && found;
  }, "device_unassigned of the deleted device");
  t.like(unassigned, { organizationId: org.id, unassignedByAccountId: owner.id, reason: "device_deleted" });
});

test("two organizations assigning one device at once: one 201, one 409 DEVICE_ALREADY_ASSIGNED", async (t) => {
  const holder = await account("holder");
  const adminA = await account("admin-a");
  const adminB = await account("admin-b");
  const orgA = await organization(adminA, "A");
  const orgB = await organization(adminB, "B");
  await addMember(adminA, orgA.id, holder, "member");
  await addMember(adminB, orgB.id, holder, "member");
  for (let round = 0; round < 4; round++) {
    const id = await device(holder, `race-${round}`);
    const answers = await Promise.all([
      api.authed<ErrorBody>(adminA.token, "POST", devicesPath(orgA.id), { device_id: id }),
      api.authed<ErrorBody>(adminB.token, "POST", devicesPath(orgB.id), { device_id: id }),
    ]);
    t.deepEqual(answers.map((a) => a.status).sort(), [201, 409], answers.map((a) => a.text).join(" | "));
    const lost = answers.find((a) => a.status === 409)!;
    t.is(lost.body.error, "DEVICE_ALREADY_ASSIGNED");
    const winner = answers[0]!.status === 201 ? orgA.id : orgB.id;
    t.is(await organizationOf(holder, id), winner);
  }
});

test("POST /v1/enroll/otk_…: 201 with the device assigned and an active enrollment of the organization", async (t) => {
  const owner = await account("owner");
  const me = await account("enrollee");
  const org = await organization(owner);
  const token = await orgToken(owner, org.id, "partner", 3);
  const body = await enrollBody();

  // A refused body leaves the use untouched; an organization token is not for POST /v1/devices.
  expectError(
    t,
    await api.authed(me.token, "POST", `/v1/enroll/${token.token}`, { ...body, hostname: "" }),
    400,
    "VALIDATION_ERROR",
    /hostname/,
  );
  expectError(
    t,
    await api.authed(me.token, "POST", `/v1/enroll/${token.token}`, { ...body, client_cert_csr: "nope" }),
    400,
    "VALIDATION_ERROR",
    /client_cert_csr/,
  );
  expectError(
    t,
    await api.authed(me.token, "POST", "/v1/devices", { ...body, enrollment_token: token.token }),
    400,
    "VALIDATION_ERROR",
    /enrollment_token/,
  );
  const listTokens = async () =>
    (await api.authed<{ data: { id: string; uses: number }[] }>(owner.token, "GET", `/v1/organizations/${org.id}/tokens`)).body.data;
  t.is((await listTokens())[0]!.uses, 0);

  const res = await api.authed<Enrolled>(me.token, "POST", `/v1/enroll/${token.token}`, body);
  t.is(res.status, 201, res.text);
  t.deepEqual(Object.keys(res.body).sort(), ["blocklist_version", "ca_cert", "client_cert", "config", "device", "enrollment"]);
  const { device: dev, enrollment } = res.body;
  t.is(dev.organization_id, org.id, "the device is assigned to the organization");
  t.is(dev.account_id, me.id);
  t.is(dev.enrollment_id, enrollment.id);
  t.like(enrollment, {
    tier: "partner",
    status: "active",
    device_id: dev.id,
    account_id: me.id,
    created_by: me.id,
    partner_account_id: null,
    organization_id: org.id,
    unenrollment_policy: { type: "partner_approval", delay_hours: null },
  });
  t.true(new X509Certificate(res.body.client_cert).verify(new X509Certificate(res.body.ca_cert).publicKey));
  t.true(new X509Certificate(res.body.client_cert).subjectAltName?.includes("urn:meshwork:tier:partner") ?? false);
  t.is(res.body.config.heartbeat_interval_secs, 300);
  t.deepEqual((await api.authed(me.token, "GET", `/v1/devices/${dev.id}`)).body, dev, "the device as its detail shows it");
  t.deepEqual(
    (await orgDevices(owner, org.id)).map((d) => [d.id, d.account_id]),
    [[dev.id, me.id]],
  );
  t.is((await listTokens())[0]!.uses, 1);
  // The owner sees the organization's enrollment; the enrollee too.
  t.is((await api.authed<Enrollment>(owner.token, "GET", `/v1/enrollments/${enrollment.id}`)).body.organization_id, org.id);
  t.is((await api.authed(me.token, "GET", `/v1/enrollments/${enrollment.id}`)).status, 200);

  // The events, in one transaction: redeemed, created, registered, activated, assigned.
  const [redeemed] = await until(() => {
    const found = eventsOf(OrganizationTokenRedeemedSchema, "enrollmentId", enrollment.id);
    return found.length === 1 && found;
  }, "token_redeemed");
  t.like(redeemed, { organizationId: org.id, tokenId: token.id, uses: 1, maxUses: 3, accountId: me.id, deviceId: dev.id });
  const [assigned] = await until(() => {
    const found = eventsOf(OrganizationDeviceAssignedSchema, "deviceId", dev.id);
    return found.length === 1 && found;
  }, "device_assigned");
  t.like(assigned, { organizationId: org.id, accountId: me.id, assignedByAccountId: me.id, tokenId: token.id });
  t.like(eventsOf(EnrollmentCreatedSchema, "enrollmentId", enrollment.id)[0], {
    organizationId: org.id,
    tier: "partner",
    createdBy: me.id,
  });
  t.like(eventsOf(EnrollmentActivatedSchema, "enrollmentId", enrollment.id)[0], { deviceId: dev.id, accountId: me.id });

  // Unknown tokens of either shape.
  expectError(t, await api.authed(me.token, "POST", `/v1/enroll/otk_${"x".repeat(43)}`, body), 404, "TOKEN_NOT_FOUND");
  expectError(t, await api.authed(me.token, "POST", "/v1/enroll/otk_short", body), 404, "TOKEN_NOT_FOUND");

  await until(() => logLines.some((l) => l.includes('"path":"/v1/enroll/{token}"')), "the access log line of /v1/enroll");
  t.false(
    logLines.some((l) => l.includes(token.token)),
    "no log line carries the token",
  );
  t.false(
    events.seen.some((e) => Buffer.from(e.data).includes(token.token)),
    "no event carries the token",
  );
});

test("an organization token: uses counted, exhausted → 409 TOKEN_EXHAUSTED, revoked → 404, the devices stay", async (t) => {
  const owner = await account("owner");
  const org = await organization(owner);
  const token = await orgToken(owner, org.id, "self", 2);
  const first = await enroll(await account("a"), token.token);
  const second = await enroll(await account("b"), token.token);
  const late = await account("c");
  expectError(t, await api.authed(late.token, "POST", `/v1/enroll/${token.token}`, await enrollBody()), 409, "TOKEN_EXHAUSTED");

  const another = await orgToken(owner, org.id, "self", 5);
  t.is((await api.authed(owner.token, "DELETE", `/v1/organizations/${org.id}/tokens/${another.id}`)).status, 204);
  expectError(t, await api.authed(late.token, "POST", `/v1/enroll/${another.token}`, await enrollBody()), 404, "TOKEN_NOT_FOUND");
  t.is((await api.authed(owner.token, "DELETE", `/v1/organizations/${org.id}/tokens/${token.id}`)).status, 204);
  t.deepEqual(
    (await orgDevices(owner, org.id)).map((d) => d.id).sort(),
    [first.device.id, second.device.id].sort(),
    "revoking a token leaves its devices enrolled and assigned",
  );
  const tokens = (await api.authed<{ data: { id: string; uses: number }[] }>(owner.token, "GET", `/v1/organizations/${org.id}/tokens`)).body
    .data;
  t.is(tokens.find((x) => x.id === token.id)!.uses, 2);
  t.is(tokens.find((x) => x.id === another.id)!.uses, 0);
});

test("five callers redeem a token of max_uses 2 at once: exactly two register", async (t) => {
  const owner = await account("owner");
  const org = await organization(owner);
  const token = await orgToken(owner, org.id, "authority", 2);
  const callers = await Promise.all([1, 2, 3, 4, 5].map((i) => account(`racer${i}`)));
  const bodies = await Promise.all(callers.map(() => enrollBody()));
  const answers = await Promise.all(callers.map((c, i) => api.authed<ErrorBody>(c.token, "POST", `/v1/enroll/${token.token}`, bodies[i])));
  t.deepEqual(answers.map((a) => a.status).sort(), [201, 201, 409, 409, 409], answers.map((a) => a.text.slice(0, 120)).join(" | "));
  t.true(answers.filter((a) => a.status === 409).every((a) => a.body.error === "TOKEN_EXHAUSTED"));
  t.is((await orgDevices(owner, org.id)).length, 2);
  const listed = (await api.authed<{ data: { uses: number }[] }>(owner.token, "GET", `/v1/organizations/${org.id}/tokens`)).body.data;
  t.is(listed[0]!.uses, 2);
});

test("who controls an organization's enrollment: owners and admins on partner and authority tiers; the enrollee on self", async (t) => {
  const owner = await account("owner");
  const admin = await account("admin");
  const member = await account("member");
  const org = await organization(owner);
  await addMember(owner, org.id, admin, "admin");
  await addMember(owner, org.id, member, "member");
  const enrollee = await account("enrollee");

  const partner = (await enroll(enrollee, (await orgToken(admin, org.id, "partner")).token)).enrollment;
  const path = `/v1/enrollments/${partner.id}`;
  const patched = await api.authed<Enrollment>(admin.token, "PATCH", path, { protection: { app_blocking: false } });
  t.is(patched.status, 200, patched.text);
  t.false(patched.body.protection.app_blocking);
  expectError(t, await api.authed(member.token, "PATCH", path, { protection: { app_blocking: true } }), 404, "ENROLLMENT_NOT_FOUND");
  expectError(t, await api.authed(enrollee.token, "PATCH", path, { protection: { app_blocking: true } }), 403, "FORBIDDEN");
  // The enrollee asks to leave; an admin approves.
  const requested = await api.authed<{ status: string }>(enrollee.token, "POST", `${path}/unenroll`);
  t.is(requested.status, 202, requested.text);
  t.is(requested.body.status, "pending_approval");
  expectError(t, await api.authed(member.token, "POST", `${path}/approve-unenroll`), 404, "ENROLLMENT_NOT_FOUND");
  const approved = await api.authed<{ status: string }>(admin.token, "POST", `${path}/approve-unenroll`);
  t.is(approved.status, 200, approved.text);
  t.is(approved.body.status, "unenrolled");

  // Self tier: the enrollee controls it, with the default delay; the organization's admins see it.
  const self = (await enroll(enrollee, (await orgToken(owner, org.id, "self")).token)).enrollment;
  t.like(self, { tier: "self", organization_id: org.id, unenrollment_policy: { type: "time_delay", delay_hours: 48 } });
  const selfPath = `/v1/enrollments/${self.id}`;
  expectError(t, await api.authed(admin.token, "PATCH", selfPath, { unenroll_delay_hours: 60 }), 403, "FORBIDDEN");
  const tightened = await api.authed<Enrollment>(enrollee.token, "PATCH", selfPath, { unenroll_delay_hours: 60 });
  t.is(tightened.status, 200, tightened.text);
  t.is(tightened.body.unenrollment_policy.delay_hours, 60);
});

test("deleting an organization unassigns its devices and keeps its enrollments, still leavable", async (t) => {
  const owner = await account("owner");
  const member = await account("member");
  const org = await organization(owner);
  await addMember(owner, org.id, member, "member");
  const manual = await device(member, "assigned-by-hand");
  t.is((await api.authed(owner.token, "POST", devicesPath(org.id), { device_id: manual })).status, 201);
  const enrolled = await enroll(member, (await orgToken(owner, org.id, "authority")).token);
  const self = await enroll(member, (await orgToken(owner, org.id, "self")).token);
  t.is((await orgDevices(owner, org.id)).length, 3);

  expectError(t, await api.authed(member.token, "DELETE", `/v1/organizations/${org.id}`), 403, "FORBIDDEN");
  t.is((await api.authed(owner.token, "DELETE", `/v1/organizations/${org.id}`)).status, 204);
  for (const id of [manual, enrolled.device.id, self.device.id]) t.is(await organizationOf(member, id), null, id);
  const unassigned = await until(() => {
    const found = eventsOf(OrganizationDeviceUnassignedSchema, "organizationId", org.id);
    return found.length === 3 && found;
  }, "three device_unassigned");
  t.true(unassigned.every((e) => e.reason === "organization_deleted" && e.unassignedByAccountId === owner.id));

  // The enrollments stay, readable by their enrollee, organization_id kept as their origin.
  const kept = await api.authed<Enrollment>(member.token, "GET", `/v1/enrollments/${enrolled.enrollment.id}`);
  t.is(kept.status, 200, kept.text);
  t.like(kept.body, { status: "active", organization_id: org.id, partner_account_id: owner.id, tier: "authority" });
  const keptSelf = await api.authed<Enrollment>(member.token, "GET", `/v1/enrollments/${self.enrollment.id}`);
  t.like(keptSelf.body, { status: "active", organization_id: org.id, partner_account_id: null });
  const [handedOver] = await until(() => {
    const found = eventsOf(EnrollmentUpdatedSchema, "enrollmentId", enrolled.enrollment.id);
    return found.length === 1 && found;
  }, "enrollment.updated of the handed-over enrollment");
  t.is(handedOver!.updatedBy, owner.id);

  // The deleting owner became its approver: leaving it is still possible.
  const path = `/v1/enrollments/${enrolled.enrollment.id}`;
  t.is((await api.authed<{ status: string }>(member.token, "POST", `${path}/unenroll`)).body.status, "pending_approval");
  const approved = await api.authed<{ status: string }>(owner.token, "POST", `${path}/approve-unenroll`);
  t.is(approved.status, 200, approved.text);
  t.is(approved.body.status, "unenrolled");
});

test("an organization deleted while its token is redeemed: each registration either lands and is unassigned, or is 404", async (t) => {
  const owner = await account("owner");
  const callers = await Promise.all([1, 2, 3, 4].map((i) => account(`racer${i}`)));
  for (let round = 0; round < 3; round++) {
    const org = await organization(owner, `Doomed ${round}`);
    const token = await orgToken(owner, org.id, "partner", 100);
    const bodies = await Promise.all(callers.map(() => enrollBody()));
    const [deleted, ...answers] = await Promise.all([
      api.authed(owner.token, "DELETE", `/v1/organizations/${org.id}`),
      ...callers.map((c, i) => api.authed<Enrolled & ErrorBody>(c.token, "POST", `/v1/enroll/${token.token}`, bodies[i])),
    ]);
    t.is(deleted!.status, 204, deleted!.text);
    for (const [i, answer] of answers.entries()) {
      if (answer.status === 201) {
        t.is(await organizationOf(callers[i]!, answer.body.device.id), null, "a device registered first is unassigned by the deletion");
      } else {
        expectError(t, answer, 404, "TOKEN_NOT_FOUND");
      }
    }
  }
});
