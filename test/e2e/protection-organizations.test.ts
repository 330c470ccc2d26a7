// Device protection, organizations end to end through the REST front with fetch: organizations,
// members (added, invited by mail to an smtp-server started here, joining on registration), the
// rank rules and the last owner (concurrent leaves included), bulk enrollment tokens with their QR
// read back with pngjs + jsqr, 403 against 404, validation naming fields, and the events.
import type { AddressInfo } from "node:net";
import { type DescMessage, fromBinary } from "@bufbuild/protobuf";
import test, { type ExecutionContext } from "ava";
import jsqrModule from "jsqr";
import { simpleParser } from "mailparser";
import { PNG } from "pngjs";
import { SMTPServer } from "smtp-server";
import {
  OrganizationCreatedSchema,
  OrganizationDeletedSchema,
  OrganizationMemberAddedSchema,
  OrganizationMemberRemovedSchema,
  OrganizationMemberUpdatedSchema,
  OrganizationTokenCreatedSchema,
  OrganizationTokenRevokedSchema,
  OrganizationUpdatedSchema,
} from "../../gen/protection/v1/events_pb.js";
import { type EventWatch, type SeenEvent, watchStream } from "../support/event-watch.js";
import { type ErrorBody, freshEmail, protectionClient } from "../support/protection.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

// jsqr's types describe an ES module; Node loads its CommonJS build, whose exports are the function itself.
const jsQR = jsqrModule as unknown as typeof jsqrModule.default;

const PUBLIC_BASE = "https://protect.example.test";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface Organization {
  id: string;
  name: string;
  description: string | null;
  created_at: string;
  role: string;
}

interface Member {
  id: string;
  account_id: string | null;
  email: string;
  display_name: string | null;
  role: string;
  status: string;
  created_at: string;
}

interface TokenItem {
  id: string;
  label: string;
  tier: string;
  max_uses: number;
  uses: number;
  created_at: string;
  revoked_at: string | null;
}

interface Mail {
  to: string;
  subject: string;
  text: string;
}

let mesh: TestMesh;
let api: ReturnType<typeof protectionClient>;
let events: EventWatch<SeenEvent>;
const mails: Mail[] = [];
let smtp: SMTPServer;

test.before(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, _session, callback) {
      simpleParser(stream).then(
        (mail) => {
          const to = Array.isArray(mail.to) ? mail.to[0] : mail.to;
          mails.push({ to: to?.value[0]?.address ?? "", subject: mail.subject ?? "", text: mail.text ?? "" });
          callback();
        },
        (err: Error) => callback(err),
      );
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
  const { port } = smtp.server.address() as AddressInfo;
  mesh = await startTestMesh({
    flags: [
      `--Protection:Smtp:Url=smtp://127.0.0.1:${port}`,
      `--Protection:PublicBaseUrl=${PUBLIC_BASE}`,
      "--Protection:RateLimits:Register:Limit=100000",
      "--Protection:RateLimits:LoginPerIp:Limit=100000",
    ],
  });
  api = protectionClient(mesh.frontUrl("protection"));
  events = await watchStream(mesh, "protection.v1.organization.>", "PROTECTION");
});

test.after.always(async () => {
  await events?.stop();
  await mesh?.close();
  await new Promise<void>((resolve) => (smtp ? smtp.close(() => resolve()) : resolve()));
});

type T = ExecutionContext;

function expectError(t: T, res: { status: number; body: unknown }, status: number, code: string, field?: RegExp) {
  t.is(res.status, status, JSON.stringify(res.body));
  t.is((res.body as ErrorBody).error, code, JSON.stringify(res.body));
  t.is(typeof (res.body as ErrorBody).message, "string");
  if (field) t.regex((res.body as ErrorBody).message, field);
}

async function account(name = "Test User") {
  const email = freshEmail(name.toLowerCase().replace(/\W+/g, ""));
  const registered = await api.register(email, name);
  const tokens = await api.login(email);
  return { email, id: registered.account_id, token: tokens.access_token };
}
type Account = Awaited<ReturnType<typeof account>>;

async function organization(owner: Account, name = "Acme Schools"): Promise<Organization> {
  const res = await api.authed<Organization>(owner.token, "POST", "/v1/organizations", { name });
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${res.text}`);
  return res.body;
}

async function addMember(by: Account, orgId: string, who: Account, role: string): Promise<Member> {
  const res = await api.authed<Member>(by.token, "POST", `/v1/organizations/${orgId}/members`, { email: who.email, role });
  if (res.status !== 201) throw new Error(`add member answered ${res.status}: ${res.text}`);
  return res.body;
}

async function members(by: Account, orgId: string): Promise<Member[]> {
  const res = await api.authed<{ data: Member[] }>(by.token, "GET", `/v1/organizations/${orgId}/members`);
  if (res.status !== 200) throw new Error(`list members answered ${res.status}: ${res.text}`);
  return res.body.data;
}

/** The decoded events of one type seen so far that concern `organizationId`. */
function eventsOf<D extends DescMessage>(schema: D, subject: string, organizationId: string) {
  return events.seen
    .filter((e) => e.subject === subject)
    .map((e) => ({ seen: e, message: fromBinary(schema, e.data) as unknown as { organizationId: string } & Record<string, unknown> }))
    .filter((e) => e.message.organizationId === organizationId);
}

function readQr(png: Buffer): string | undefined {
  const image = PNG.sync.read(png);
  return jsQR(new Uint8ClampedArray(image.data.buffer, image.data.byteOffset, image.data.byteLength), image.width, image.height)?.data;
}

test("an organization: created (the caller owner), listed, read by members, changed by admins", async (t) => {
  const owner = await account("Olga Owner");
  const created = await api.authed<Organization>(owner.token, "POST", "/v1/organizations", {
    name: "  Acme Schools  ",
    description: " Devices of the Acme schools ",
  });
  t.is(created.status, 201, created.text);
  t.deepEqual(Object.keys(created.body).sort(), ["created_at", "description", "id", "name", "role"]);
  t.regex(created.body.id, UUID);
  t.is(created.body.name, "Acme Schools");
  t.is(created.body.description, "Devices of the Acme schools");
  t.is(created.body.role, "owner");
  t.false(Number.isNaN(Date.parse(created.body.created_at)));

  const bare = await api.authed<Organization>(owner.token, "POST", "/v1/organizations", { name: "No Description" });
  t.is(bare.status, 201);
  t.is(bare.body.description, null, "an unset description is null");

  const list = await api.authed<{ data: Organization[] }>(owner.token, "GET", "/v1/organizations");
  t.is(list.status, 200);
  t.deepEqual(Object.keys(list.body), ["data"]);
  t.deepEqual(
    list.body.data.map((o) => [o.id, o.role]),
    [
      [created.body.id, "owner"],
      [bare.body.id, "owner"],
    ],
  );

  const member = await account("Max Member");
  await addMember(owner, created.body.id, member, "member");
  const seen = await api.authed<Organization>(member.token, "GET", `/v1/organizations/${created.body.id}`);
  t.is(seen.status, 200);
  t.is(seen.body.role, "member", "role is the caller's own");
  t.is(seen.body.name, "Acme Schools");
  const memberList = await api.authed<{ data: Organization[] }>(member.token, "GET", "/v1/organizations");
  t.deepEqual(
    memberList.body.data.map((o) => o.id),
    [created.body.id],
  );

  const renamed = await api.authed<Organization>(owner.token, "PATCH", `/v1/organizations/${created.body.id}`, { name: "Acme Academy" });
  t.is(renamed.status, 200);
  t.is(renamed.body.name, "Acme Academy");
  t.is(renamed.body.description, "Devices of the Acme schools", "a field not sent is kept");
  const cleared = await api.authed<Organization>(owner.token, "PATCH", `/v1/organizations/${created.body.id}`, { description: "" });
  t.is(cleared.status, 200);
  t.is(cleared.body.description, null, "an empty description removes it");

  const admin = await account("Ada Admin");
  await addMember(owner, created.body.id, admin, "admin");
  const byAdmin = await api.authed<Organization>(admin.token, "PATCH", `/v1/organizations/${created.body.id}`, { description: "By admin" });
  t.is(byAdmin.status, 200);
  t.is(byAdmin.body.role, "admin");
  expectError(t, await api.authed(member.token, "PATCH", `/v1/organizations/${created.body.id}`, { name: "Mine" }), 403, "FORBIDDEN");

  await until(
    () => eventsOf(OrganizationUpdatedSchema, "protection.v1.organization.updated", created.body.id).length >= 3,
    "updated events",
  );
  const [first] = eventsOf(OrganizationCreatedSchema, "protection.v1.organization.created", created.body.id);
  t.truthy(first);
  t.is(first!.message.accountId, owner.id);
  t.is(first!.seen.msgId, (first!.message as { eventId?: string }).eventId);
});

test("organization fields are checked, each refusal naming its field", async (t) => {
  const owner = await account();
  const org = await organization(owner);
  const cases: [string, string, object, RegExp][] = [
    ["POST", "/v1/organizations", { name: "   " }, /name/],
    ["POST", "/v1/organizations", { name: "x".repeat(101) }, /name/],
    ["POST", "/v1/organizations", { name: "Two\nlines" }, /name/],
    ["POST", "/v1/organizations", {}, /name/],
    ["POST", "/v1/organizations", { name: "Fine", description: "d".repeat(1001) }, /description/],
    ["POST", "/v1/organizations", { name: "Fine", colour: "red" }, /colour/],
    ["POST", "/v1/organizations", { name: 7 }, /name/],
    ["PATCH", `/v1/organizations/${org.id}`, { name: "" }, /name/],
    ["PATCH", `/v1/organizations/${org.id}`, { description: "d".repeat(1001) }, /description/],
  ];
  for (const [method, path, body, field] of cases) {
    const res = await api.authed<ErrorBody>(owner.token, method, path, body);
    t.is(res.status, 400, `${method} ${JSON.stringify(body)}: ${res.text}`);
    t.is(res.body.error, "VALIDATION_ERROR");
    t.regex(res.body.message, field, JSON.stringify(body));
  }
  t.is((await api.authed(owner.token, "POST", "/v1/organizations", { name: "x".repeat(100), description: "d".repeat(1000) })).status, 201);
  const unchanged = await api.authed<Organization>(owner.token, "GET", `/v1/organizations/${org.id}`);
  t.is(unchanged.body.name, "Acme Schools");
  expectError(t, await api.call("GET", "/v1/organizations"), 401, "UNAUTHORIZED");
});

test("outsiders get 404 ORGANIZATION_NOT_FOUND everywhere; members without the role get 403", async (t) => {
  const owner = await account();
  const member = await account();
  const outsider = await account();
  const org = await organization(owner);
  const m = await addMember(owner, org.id, member, "member");
  const base = `/v1/organizations/${org.id}`;
  const calls: [string, string, object?][] = [
    ["GET", base],
    ["PATCH", base, { name: "Taken" }],
    ["DELETE", base],
    ["POST", `${base}/members`, { email: outsider.email, role: "member" }],
    ["GET", `${base}/members`],
    ["PATCH", `${base}/members/${m.id}`, { role: "admin" }],
    ["DELETE", `${base}/members/${m.id}`],
    ["POST", `${base}/tokens`, { label: "Mine", tier: "self", max_uses: 5 }],
    ["GET", `${base}/tokens`],
    ["DELETE", `${base}/tokens/${m.id}`],
    ["GET", `${base}/tokens/${m.id}/qr`],
  ];
  for (const [method, path, body] of calls) {
    expectError(t, await api.authed(outsider.token, method, path, body), 404, "ORGANIZATION_NOT_FOUND");
  }
  for (const id of ["not-a-uuid", "0190f3c2-7a1b-7c3d-8e4f-5a6b7c8d9e0f"]) {
    expectError(t, await api.authed(owner.token, "GET", `/v1/organizations/${id}`), 404, "ORGANIZATION_NOT_FOUND");
  }
  // A member may read, not change.
  t.is((await api.authed(member.token, "GET", base)).status, 200);
  t.is((await api.authed(member.token, "GET", `${base}/members`)).status, 200);
  for (const [method, path, body] of calls.filter(([method, path]) => method !== "GET" || path.includes("/tokens"))) {
    if (method === "DELETE" && path.endsWith(m.id)) continue; // leaving is allowed: tested below
    expectError(t, await api.authed(member.token, method, path, body), 403, "FORBIDDEN");
  }
  // An admin may do all but delete the organization.
  const admin = await account();
  await addMember(owner, org.id, admin, "admin");
  expectError(t, await api.authed(admin.token, "DELETE", base), 403, "FORBIDDEN");
  t.is((await api.authed(owner.token, "GET", base)).status, 200, "still there");
});

test("members: a registered address joins active and is told by mail; an unknown one is invited by mail and joins on registration", async (t) => {
  const owner = await account("Olga Owner");
  const org = await organization(owner, "Lighthouse Club");
  const known = await account("Kim Known");
  const added = await api.authed<Member>(owner.token, "POST", `/v1/organizations/${org.id}/members`, {
    email: ` ${known.email.toUpperCase()} `,
    role: "admin",
  });
  t.is(added.status, 201, added.text);
  t.deepEqual(Object.keys(added.body).sort(), ["account_id", "created_at", "display_name", "email", "id", "role", "status"]);
  t.regex(added.body.id, UUID);
  t.like(added.body, { account_id: known.id, email: known.email, display_name: "Kim Known", role: "admin", status: "active" });
  const told = await until(() => mails.find((m) => m.to === known.email), "the mail telling a registered address it was added");
  t.regex(told.subject, /Lighthouse Club/);
  t.regex(told.text, /Olga Owner/);
  t.regex(told.text, /Lighthouse Club/);

  const invitedEmail = freshEmail("invitee");
  const invited = await api.authed<Member>(owner.token, "POST", `/v1/organizations/${org.id}/members`, {
    email: invitedEmail,
    role: "member",
  });
  t.is(invited.status, 201, invited.text);
  t.like(invited.body, { account_id: null, email: invitedEmail, display_name: null, role: "member", status: "invited" });
  const invitation = await until(() => mails.find((m) => m.to === invitedEmail), "the organization invitation mail");
  t.regex(invitation.subject, /Lighthouse Club/);
  t.regex(invitation.text, /Olga Owner/, "the invitation names the inviter");
  t.regex(invitation.text, /Lighthouse Club/, "and the organization");
  t.regex(invitation.text, /protect\.example\.test/, "and where to register");

  // An invitee is no member yet: it cannot see the organization.
  const listed = await members(owner, org.id);
  t.deepEqual(
    listed.map((m) => [m.email, m.role, m.status]),
    [
      [owner.email, "owner", "active"],
      [known.email, "admin", "active"],
      [invitedEmail, "member", "invited"],
    ],
  );
  t.is(listed[0]!.display_name, "Olga Owner");

  const registered = await api.register(invitedEmail.toUpperCase(), "Ivy Invitee");
  const ivy = await api.login(invitedEmail);
  const seen = await api.authed<Organization>(ivy.access_token, "GET", `/v1/organizations/${org.id}`);
  t.is(seen.status, 200, "the invitee joined on registration");
  t.is(seen.body.role, "member");
  const after = (await members(owner, org.id)).find((m) => m.id === invited.body.id);
  t.like(after, { account_id: registered.account_id, display_name: "Ivy Invitee", status: "active", email: invitedEmail });

  await until(
    () =>
      eventsOf(OrganizationMemberUpdatedSchema, "protection.v1.organization.member_updated", org.id).find(
        (e) => e.message.memberId === invited.body.id,
      ),
    "member_updated on joining",
  );
  const joined = eventsOf(OrganizationMemberUpdatedSchema, "protection.v1.organization.member_updated", org.id).find(
    (e) => e.message.memberId === invited.body.id,
  )!.message;
  t.like(joined, { accountId: registered.account_id, status: "active", previousStatus: "invited", role: "member", updatedByAccountId: "" });
  const addedEvents = await until(() => {
    const found = eventsOf(OrganizationMemberAddedSchema, "protection.v1.organization.member_added", org.id);
    return found.length >= 3 && found;
  }, "member_added events");
  t.deepEqual(
    addedEvents.map((e) => [e.message.accountId, e.message.status, e.message.addedByAccountId]).sort(),
    [
      ["", "invited", owner.id],
      [known.id, "active", owner.id],
      [owner.id, "active", owner.id],
    ].sort(),
  );
  for (const e of addedEvents) t.false(Buffer.from(e.seen.data).toString("latin1").includes("@"), "events carry no e-mail");
});

test("members: a duplicate address or account is 409 MEMBER_ALREADY_EXISTS; bad fields are 400 naming them", async (t) => {
  const owner = await account();
  const org = await organization(owner);
  const known = await account();
  await addMember(owner, org.id, known, "member");
  const path = `/v1/organizations/${org.id}/members`;
  expectError(
    t,
    await api.authed(owner.token, "POST", path, { email: known.email.toUpperCase(), role: "admin" }),
    409,
    "MEMBER_ALREADY_EXISTS",
  );
  expectError(t, await api.authed(owner.token, "POST", path, { email: owner.email, role: "member" }), 409, "MEMBER_ALREADY_EXISTS");
  const invitee = freshEmail("twice");
  t.is((await api.authed(owner.token, "POST", path, { email: invitee, role: "member" })).status, 201);
  expectError(t, await api.authed(owner.token, "POST", path, { email: invitee, role: "member" }), 409, "MEMBER_ALREADY_EXISTS");
  // The same account under its new address is still the same member.
  const moved = freshEmail("moved");
  t.is((await api.authed(known.token, "PATCH", "/v1/accounts/me", { email: moved })).status, 200);
  expectError(t, await api.authed(owner.token, "POST", path, { email: moved, role: "member" }), 409, "MEMBER_ALREADY_EXISTS");
  t.is((await members(owner, org.id)).find((m) => m.account_id === known.id)?.email, moved, "a member shows its account's e-mail");

  const cases: [object, RegExp][] = [
    [{ email: "nope", role: "member" }, /email/],
    [{ email: freshEmail(), role: "boss" }, /role/],
    [{ email: freshEmail() }, /role/],
    [{ role: "member" }, /email/],
  ];
  for (const [body, field] of cases) {
    const res = await api.authed<ErrorBody>(owner.token, "POST", path, body);
    expectError(t, res, 400, "VALIDATION_ERROR", field);
  }
  expectError(
    t,
    await api.authed(owner.token, "PATCH", `${path}/${(await members(owner, org.id))[1]!.id}`, { role: "king" }),
    400,
    "VALIDATION_ERROR",
    /role/,
  );
  for (const id of ["nope", "0190f3c2-7a1b-7c3d-8e4f-5a6b7c8d9e0f"]) {
    expectError(t, await api.authed(owner.token, "PATCH", `${path}/${id}`, { role: "member" }), 404, "MEMBER_NOT_FOUND");
    expectError(t, await api.authed(owner.token, "DELETE", `${path}/${id}`), 404, "MEMBER_NOT_FOUND");
  }
  // Another organization's member is not found here.
  const other = await organization(owner, "Other");
  const otherMember = (await members(owner, other.id))[0]!;
  expectError(t, await api.authed(owner.token, "PATCH", `${path}/${otherMember.id}`, { role: "member" }), 404, "MEMBER_NOT_FOUND");
});

test("rank rules: one grants at most one's own role and changes or removes only lower ranks; owners anyone; anyone may leave", async (t) => {
  const owner = await account();
  const admin = await account();
  const admin2 = await account();
  const member = await account();
  const org = await organization(owner);
  const path = `/v1/organizations/${org.id}/members`;
  const ownerRow = (await members(owner, org.id))[0]!;
  const a = await addMember(owner, org.id, admin, "admin");
  const m = await addMember(admin, org.id, member, "member");
  // An admin grants admin, not owner.
  expectError(t, await api.authed(admin.token, "POST", path, { email: freshEmail(), role: "owner" }), 403, "FORBIDDEN");
  const a2 = await addMember(admin, org.id, admin2, "admin");
  t.is(a2.role, "admin");
  // An admin changes members only, to at most admin.
  expectError(t, await api.authed(admin.token, "PATCH", `${path}/${a2.id}`, { role: "member" }), 403, "FORBIDDEN");
  expectError(t, await api.authed(admin.token, "PATCH", `${path}/${ownerRow.id}`, { role: "member" }), 403, "FORBIDDEN");
  expectError(t, await api.authed(admin.token, "PATCH", `${path}/${a.id}`, { role: "owner" }), 403, "FORBIDDEN");
  expectError(t, await api.authed(admin.token, "PATCH", `${path}/${m.id}`, { role: "owner" }), 403, "FORBIDDEN");
  const promoted = await api.authed<Member>(admin.token, "PATCH", `${path}/${m.id}`, { role: "admin" });
  t.is(promoted.status, 200);
  t.like(promoted.body, { id: m.id, role: "admin", account_id: member.id, status: "active" });
  // Now an admin: the other admin can no longer demote or remove it.
  expectError(t, await api.authed(admin.token, "PATCH", `${path}/${m.id}`, { role: "member" }), 403, "FORBIDDEN");
  expectError(t, await api.authed(admin.token, "DELETE", `${path}/${m.id}`), 403, "FORBIDDEN");
  expectError(t, await api.authed(admin.token, "DELETE", `${path}/${ownerRow.id}`), 403, "FORBIDDEN");
  // The owner changes anyone.
  const demoted = await api.authed<Member>(owner.token, "PATCH", `${path}/${m.id}`, { role: "member" });
  t.is(demoted.body.role, "member");
  // A member changes and removes nobody else, but may leave.
  expectError(t, await api.authed(member.token, "PATCH", `${path}/${m.id}`, { role: "admin" }), 403, "FORBIDDEN");
  expectError(t, await api.authed(member.token, "DELETE", `${path}/${a.id}`), 403, "FORBIDDEN");
  // An admin removes a member.
  t.is((await api.authed(admin.token, "DELETE", `${path}/${m.id}`)).status, 204);
  expectError(t, await api.authed(member.token, "GET", `/v1/organizations/${org.id}`), 404, "ORGANIZATION_NOT_FOUND");
  // An admin leaves.
  t.is((await api.authed(admin2.token, "DELETE", `${path}/${a2.id}`)).status, 204);
  // The owner makes the admin an owner, who may then change the first owner.
  t.is((await api.authed<Member>(owner.token, "PATCH", `${path}/${a.id}`, { role: "owner" })).body.role, "owner");
  const ownerDemoted = await api.authed<Member>(admin.token, "PATCH", `${path}/${ownerRow.id}`, { role: "admin" });
  t.is(ownerDemoted.status, 200);
  t.is(ownerDemoted.body.role, "admin");
  t.deepEqual(
    (await members(owner, org.id)).map((x) => [x.account_id, x.role]),
    [
      [owner.id, "admin"],
      [admin.id, "owner"],
    ],
  );

  const removed = await until(
    () =>
      eventsOf(OrganizationMemberRemovedSchema, "protection.v1.organization.member_removed", org.id).find(
        (e) => e.message.memberId === m.id,
      ),
    "member_removed",
  );
  t.like(removed.message, { memberId: m.id, accountId: member.id, removedByAccountId: admin.id });
  const changed = await until(
    () =>
      eventsOf(OrganizationMemberUpdatedSchema, "protection.v1.organization.member_updated", org.id).find(
        (e) => e.message.memberId === m.id && e.message.updatedByAccountId === admin.id,
      ),
    "member_updated",
  );
  t.like(changed.message, { memberId: m.id, role: "admin", previousRole: "member", updatedByAccountId: admin.id, status: "active" });
});

test("the last owner cannot be demoted or removed (409 LAST_OWNER), even when two owners leave at once", async (t) => {
  const owner = await account();
  const org = await organization(owner);
  const path = `/v1/organizations/${org.id}/members`;
  const ownerRow = (await members(owner, org.id))[0]!;
  expectError(t, await api.authed(owner.token, "PATCH", `${path}/${ownerRow.id}`, { role: "admin" }), 409, "LAST_OWNER");
  expectError(t, await api.authed(owner.token, "DELETE", `${path}/${ownerRow.id}`), 409, "LAST_OWNER");
  // An invited owner is no owner yet.
  const invited = await api.authed<Member>(owner.token, "POST", path, { email: freshEmail("future-owner"), role: "owner" });
  t.is(invited.status, 201);
  expectError(t, await api.authed(owner.token, "DELETE", `${path}/${ownerRow.id}`), 409, "LAST_OWNER");
  t.is((await api.authed(owner.token, "DELETE", `${path}/${invited.body.id}`)).status, 204, "an invitation is withdrawn");

  const second = await account();
  const secondRow = await addMember(owner, org.id, second, "owner");
  // With two owners, one may step down, then the other is the last.
  t.is((await api.authed(owner.token, "PATCH", `${path}/${ownerRow.id}`, { role: "admin" })).status, 200);
  expectError(t, await api.authed(second.token, "DELETE", `${path}/${secondRow.id}`), 409, "LAST_OWNER");
  t.is((await api.authed(second.token, "PATCH", `${path}/${ownerRow.id}`, { role: "owner" })).status, 200);

  // Both owners leave at the same moment: exactly one goes.
  const answers = await Promise.all([
    api.authed<ErrorBody>(owner.token, "DELETE", `${path}/${ownerRow.id}`),
    api.authed<ErrorBody>(second.token, "DELETE", `${path}/${secondRow.id}`),
  ]);
  t.deepEqual(answers.map((a) => a.status).sort(), [204, 409], answers.map((a) => a.text).join(" | "));
  t.is(answers.find((a) => a.status === 409)!.body.error, "LAST_OWNER");
  const left = await api.authed<{ data: Member[] }>(
    answers[0]!.status === 204 ? second.token : owner.token,
    "GET",
    `/v1/organizations/${org.id}/members`,
  );
  t.deepEqual(
    left.body.data.map((m) => [m.role, m.status]),
    [["owner", "active"]],
  );
});

test("tokens: created with a one-time secret and a QR of the enroll link, listed without it, revoked at once", async (t) => {
  const owner = await account();
  const admin = await account();
  const org = await organization(owner);
  await addMember(owner, org.id, admin, "admin");
  const path = `/v1/organizations/${org.id}/tokens`;
  const created = await api.authed<{ id: string; token: string; qr_url: string }>(admin.token, "POST", path, {
    label: "  Year 9 laptops ",
    tier: "authority",
    max_uses: 30,
  });
  t.is(created.status, 201, created.text);
  t.deepEqual(Object.keys(created.body).sort(), ["id", "qr_url", "token"]);
  t.regex(created.body.id, UUID);
  t.regex(created.body.token, /^otk_[A-Za-z0-9_-]{43}$/);
  t.is(created.body.qr_url, `${PUBLIC_BASE}/v1/organizations/${org.id}/tokens/${created.body.id}/qr`);

  const second = await api.authed<{ id: string; token: string }>(owner.token, "POST", path, { label: "Staff", tier: "self", max_uses: 1 });
  t.is(second.status, 201);
  t.not(second.body.token, created.body.token);

  const list = await api.authed<{ data: TokenItem[] }>(admin.token, "GET", path);
  t.is(list.status, 200);
  t.false(list.text.includes(created.body.token), "a list never shows a token");
  t.deepEqual(
    list.body.data.map((x) => Object.keys(x).sort()),
    [
      ["created_at", "id", "label", "max_uses", "revoked_at", "tier", "uses"],
      ["created_at", "id", "label", "max_uses", "revoked_at", "tier", "uses"],
    ],
  );
  t.like(list.body.data[1], { id: created.body.id, label: "Year 9 laptops", tier: "authority", max_uses: 30, uses: 0, revoked_at: null });
  t.is(list.body.data[0]!.id, second.body.id, "newest first");

  // The QR: a PNG of <PublicBaseUrl>/v1/enroll/<token>, not to be cached.
  const qrPath = `/v1/organizations/${org.id}/tokens/${created.body.id}/qr`;
  const qr = await fetch(`${mesh.frontUrl("protection")}${qrPath}`, { headers: api.bearer(admin.token) });
  t.is(qr.status, 200);
  t.is(qr.headers.get("content-type"), "image/png");
  t.is(qr.headers.get("cache-control"), "no-store");
  t.is(readQr(Buffer.from(await qr.arrayBuffer())), `${PUBLIC_BASE}/v1/enroll/${created.body.token}`);

  // Revoked: at once, once.
  t.is((await api.authed(admin.token, "DELETE", `${path}/${created.body.id}`)).status, 204);
  expectError(t, await api.authed(admin.token, "DELETE", `${path}/${created.body.id}`), 404, "TOKEN_NOT_FOUND");
  expectError(t, await api.authed(admin.token, "GET", qrPath), 404, "TOKEN_NOT_FOUND");
  const revoked = (await api.authed<{ data: TokenItem[] }>(admin.token, "GET", path)).body.data.find((x) => x.id === created.body.id)!;
  t.false(Number.isNaN(Date.parse(revoked.revoked_at ?? "")), "revoked_at is set");
  for (const id of ["nope", "0190f3c2-7a1b-7c3d-8e4f-5a6b7c8d9e0f"]) {
    expectError(t, await api.authed(admin.token, "DELETE", `${path}/${id}`), 404, "TOKEN_NOT_FOUND");
    expectError(t, await api.authed(admin.token, "GET", `${path}/${id}/qr`), 404, "TOKEN_NOT_FOUND");
  }
  // Another organization's token is not found through this one.
  const other = await organization(owner, "Other");
  expectError(t, await api.authed(owner.token, "GET", `/v1/organizations/${other.id}/tokens/${second.body.id}/qr`), 404, "TOKEN_NOT_FOUND");

  const made = await until(
    () => eventsOf(OrganizationTokenCreatedSchema, "protection.v1.organization.token_created", org.id).length >= 2,
    "token_created events",
  );
  t.true(made);
  const [createdEvent] = eventsOf(OrganizationTokenCreatedSchema, "protection.v1.organization.token_created", org.id);
  t.like(createdEvent!.message, { tokenId: created.body.id, tier: "authority", maxUses: 30, createdByAccountId: admin.id });
  const [revokedEvent] = await until(() => {
    const found = eventsOf(OrganizationTokenRevokedSchema, "protection.v1.organization.token_revoked", org.id);
    return found.length > 0 && found;
  }, "token_revoked");
  t.like(revokedEvent!.message, { tokenId: created.body.id, revokedByAccountId: admin.id, reason: "revoked" });
  const secret = created.body.token.slice(4);
  for (const e of events.seen) {
    t.false(Buffer.from(e.data).toString("latin1").includes(secret), `${e.subject} carries no token`);
  }
});

test("tokens: fields are checked, each refusal naming its field", async (t) => {
  const owner = await account();
  const org = await organization(owner);
  const path = `/v1/organizations/${org.id}/tokens`;
  const good = { label: "Lab", tier: "partner", max_uses: 100000 };
  t.is((await api.authed(owner.token, "POST", path, good)).status, 201);
  const cases: [object, RegExp][] = [
    [{ ...good, label: " " }, /label/],
    [{ ...good, label: "l".repeat(101) }, /label/],
    [{ ...good, tier: "gold" }, /tier/],
    [{ ...good, max_uses: 0 }, /max_uses/],
    [{ ...good, max_uses: 100001 }, /max_uses/],
    [{ ...good, max_uses: -1 }, /max_uses/],
    [{ ...good, max_uses: 1.5 }, /max_uses/],
    [{ ...good, max_uses: "many" }, /max_uses/],
    [{ label: "Lab", tier: "self" }, /max_uses/],
    [{ label: "Lab", max_uses: 2 }, /tier/],
  ];
  for (const [body, field] of cases) {
    const res = await api.authed<ErrorBody>(owner.token, "POST", path, body);
    expectError(t, res, 400, "VALIDATION_ERROR", field);
  }
  t.is((await api.authed<{ data: TokenItem[] }>(owner.token, "GET", path)).body.data.length, 1, "no refused token was made");
});

test("deleting an organization: owners only, 204; its tokens are revoked and its members go", async (t) => {
  const owner = await account();
  const member = await account();
  const org = await organization(owner);
  await addMember(owner, org.id, member, "member");
  const token = await api.authed<{ id: string }>(owner.token, "POST", `/v1/organizations/${org.id}/tokens`, {
    label: "Gone soon",
    tier: "self",
    max_uses: 3,
  });
  const res = await api.authed(owner.token, "DELETE", `/v1/organizations/${org.id}`);
  t.is(res.status, 204);
  t.is(res.text, "");
  expectError(t, await api.authed(owner.token, "GET", `/v1/organizations/${org.id}`), 404, "ORGANIZATION_NOT_FOUND");
  expectError(t, await api.authed(member.token, "GET", `/v1/organizations/${org.id}/members`), 404, "ORGANIZATION_NOT_FOUND");
  expectError(t, await api.authed(owner.token, "DELETE", `/v1/organizations/${org.id}`), 404, "ORGANIZATION_NOT_FOUND");
  t.false((await api.authed<{ data: Organization[] }>(member.token, "GET", "/v1/organizations")).body.data.some((o) => o.id === org.id));
  await until(() => eventsOf(OrganizationDeletedSchema, "protection.v1.organization.deleted", org.id).length === 1, "organization.deleted");
  const revoked = eventsOf(OrganizationTokenRevokedSchema, "protection.v1.organization.token_revoked", org.id);
  t.deepEqual(
    revoked.map((e) => [e.message.tokenId, e.message.reason]),
    [[token.body.id, "organization_deleted"]],
  );
  t.is(eventsOf(OrganizationDeletedSchema, "protection.v1.organization.deleted", org.id)[0]!.message.accountId, owner.id);
});

test("an address invited while it registers joins all the same (registration and invitation serialize on the address)", async (t) => {
  const owner = await account("Race Owner");
  const org = await organization(owner, "Race Club");
  const emails = Array.from({ length: 20 }, (_, i) => freshEmail(`race${i}`));
  // Each address is registered and invited at the same moment: whichever commits second must see the other.
  await Promise.all(
    emails.map(async (email) => {
      const [added] = await Promise.all([
        api.authed<Member>(owner.token, "POST", `/v1/organizations/${org.id}/members`, { email, role: "member" }),
        api.register(email, "Racing Member"),
      ]);
      t.is(added.status, 201, added.text);
    }),
  );
  const listed = await members(owner, org.id);
  for (const email of emails) {
    const member = listed.find((m) => m.email === email);
    t.is(member?.status, "active", `${email} stayed ${member?.status}`);
    t.truthy(member?.account_id);
  }
});
