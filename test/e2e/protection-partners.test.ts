// Device protection's accountability partners, end to end through the REST front with fetch and an
// SMTP server (`smtp-server`) receiving the invitations: the same answer for registered and unknown
// addresses, an invitation that waits for its address to register, accept (invitee only), the list
// from both sides with nulls, removal by either side, every refusal, and the events (ids only).
import { fromBinary } from "@bufbuild/protobuf";
import test, { type ExecutionContext } from "ava";
import { PartnerAcceptedSchema, PartnerInvitedSchema, PartnerRemovedSchema } from "../../gen/protection/v1/events_pb.js";
import { isAcceptedPartner } from "../../services/protection/relations.js";
import { watchStream } from "../support/event-watch.js";
import { type MailInbox, startMailInbox } from "../support/mail-inbox.js";
import { type ErrorBody, freshEmail, protectionClient } from "../support/protection.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

interface Partner {
  id: string;
  partner_account_id: string | null;
  partner_display_name: string | null;
  status: "pending" | "accepted";
  direction: "incoming" | "outgoing";
  email: string | null;
  created_at: string;
}

const PUBLIC_BASE = "https://protect.example.org";
let inbox: MailInbox;
let mesh: TestMesh;
let api: ReturnType<typeof protectionClient>;

test.before(async () => {
  inbox = await startMailInbox();
  mesh = await startTestMesh({
    flags: [
      `--Protection:Smtp:Url=${inbox.url}`,
      `--Protection:PublicBaseUrl=${PUBLIC_BASE}`,
      "--Protection:RateLimits:Register:Limit=100000",
      "--Protection:RateLimits:LoginPerIp:Limit=100000",
      "--Protection:RateLimits:PartnerInvite:Limit=10",
    ],
  });
  api = protectionClient(mesh.frontUrl("protection"));
});

test.after.always(async () => {
  await mesh?.close();
  await inbox?.close();
});

const expectError = (t: ExecutionContext, res: { status: number; body: unknown }, status: number, code: string) => {
  t.is(res.status, status, JSON.stringify(res.body));
  t.is((res.body as ErrorBody).error, code);
  t.is(typeof (res.body as ErrorBody).message, "string");
};

async function person(displayName: string, email = freshEmail(displayName.split(" ")[0]!.toLowerCase())) {
  const { account_id } = await api.register(email, displayName);
  const { access_token } = await api.login(email);
  return { id: account_id, email, displayName, token: access_token };
}
type Person = Awaited<ReturnType<typeof person>>;

const invite = (who: Person, email: string) => api.authed<{ message: string }>(who.token, "POST", "/v1/partners/invite", { email });
const list = async (who: Person) => {
  const res = await api.authed<{ data: Partner[] }>(who.token, "GET", "/v1/partners");
  if (res.status !== 200) throw new Error(`list answered ${res.status}: ${res.text}`);
  return res.body.data;
};
const accept = (who: Person, id: string) => api.authed<Partner>(who.token, "POST", `/v1/partners/${id}/accept`);
const remove = (who: Person, id: string) => api.authed(who.token, "DELETE", `/v1/partners/${id}`);

const FIELDS = [
  "created_at",
  "detailed_access",
  "direction",
  "email",
  "id",
  "partner_account_id",
  "partner_detailed_access",
  "partner_display_name",
  "status",
];

test.serial("invite answers alike for registered and unknown addresses; the invitee accepts; both sides list it", async (t) => {
  const watch = await watchStream(mesh, "protection.v1.partner.>", "PROTECTION");
  t.teardown(() => watch.stop());
  const alice = await person("Alice Example");
  const bob = await person("Bob Example");
  const stranger = freshEmail("stranger");

  const toBob = await invite(alice, bob.email.toUpperCase());
  const toStranger = await invite(alice, ` ${stranger} `);
  t.is(toBob.status, 202, toBob.text);
  t.is(toStranger.status, 202);
  t.deepEqual(toBob.body, toStranger.body, "the same body for a registered and an unknown address");
  t.deepEqual(Object.keys(toBob.body), ["message"]);

  for (const address of [bob.email, stranger]) {
    const [mail] = await inbox.waitFor(address, 1, `the invitation to ${address}`);
    t.true(mail!.subject.includes("Alice Example"), "the subject names the inviter");
    t.true(mail!.text.includes("Alice Example"), "the text names the inviter");
    t.true(mail!.text.includes(`${PUBLIC_BASE}/partners`));
    t.false(mail!.text.includes(alice.email), "the inviter's address is not given away");
  }

  // The inviter sees the addresses invited, never whether they hold an account.
  const outgoing = await list(alice);
  t.is(outgoing.length, 2);
  for (const item of outgoing) {
    t.deepEqual(Object.keys(item).sort(), FIELDS);
    t.like(item, { status: "pending", direction: "outgoing", partner_account_id: null, partner_display_name: null });
    t.regex(item.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    t.false(Number.isNaN(Date.parse(item.created_at)));
  }
  t.deepEqual(outgoing.map((p) => p.email).sort(), [bob.email, stranger].sort());
  const link = outgoing.find((p) => p.email === bob.email)!;

  const incoming = await list(bob);
  t.deepEqual(incoming, [
    {
      id: link.id,
      partner_account_id: alice.id,
      partner_display_name: "Alice Example",
      status: "pending",
      direction: "incoming",
      email: null,
      created_at: link.created_at,
      detailed_access: false,
      partner_detailed_access: false,
    },
  ]);
  t.false(await isAcceptedPartner(mesh.db!.em().fork(), alice.id, bob.id));

  expectError(t, await accept(alice, link.id), 403, "FORBIDDEN");
  const accepted = await accept(bob, link.id);
  t.is(accepted.status, 200, accepted.text);
  t.deepEqual(accepted.body, { ...incoming[0]!, status: "accepted" });
  expectError(t, await accept(bob, link.id), 409, "NO_PENDING_REQUEST");
  expectError(t, await accept(alice, link.id), 403, "FORBIDDEN");

  t.like(
    (await list(alice)).find((p) => p.id === link.id),
    {
      status: "accepted",
      direction: "outgoing",
      partner_account_id: bob.id,
      partner_display_name: "Bob Example",
      email: bob.email,
    },
  );
  t.true(await isAcceptedPartner(mesh.db!.em().fork(), alice.id, bob.id));
  t.true(await isAcceptedPartner(mesh.db!.em().fork(), bob.id, alice.id));

  const events = await until(() => watch.seen.length >= 3 && watch.seen, "two invitations and an acceptance");
  t.deepEqual(
    events.map((e) => e.subject),
    ["protection.v1.partner.invited", "protection.v1.partner.invited", "protection.v1.partner.accepted"],
  );
  const invited = events.slice(0, 2).map((e) => fromBinary(PartnerInvitedSchema, e.data));
  const toBobEvent = invited.find((e) => e.partnerId === link.id)!;
  t.like(toBobEvent, { inviterAccountId: alice.id, inviteeAccountId: bob.id });
  t.is(invited.find((e) => e.partnerId !== link.id)!.inviteeAccountId, undefined, "no account for the unknown address");
  t.like(fromBinary(PartnerAcceptedSchema, events[2]!.data), { partnerId: link.id, inviterAccountId: alice.id, inviteeAccountId: bob.id });
  for (const e of events) {
    const text = Buffer.from(e.data).toString("latin1");
    for (const address of [alice.email, bob.email, stranger])
      t.false(text.includes(address.split("@")[0]!), `${e.subject} holds no e-mail`);
  }
});

test.serial("an invitation to an unregistered address reaches the account registered with it", async (t) => {
  const carol = await person("Carol Example");
  const daveEmail = freshEmail("dave");
  t.is((await invite(carol, daveEmail.toUpperCase())).status, 202);
  await inbox.waitFor(daveEmail, 1);

  const dave = await person("Dave Example", `  ${daveEmail.replace("dave", "DAVE")}`);
  const [incoming] = await list(dave);
  t.like(incoming, {
    status: "pending",
    direction: "incoming",
    partner_account_id: carol.id,
    partner_display_name: "Carol Example",
    email: null,
  });
  expectError(t, await invite(dave, carol.email), 409, "PARTNER_ALREADY_EXISTS");
  const accepted = await accept(dave, incoming!.id);
  t.is(accepted.status, 200);
  t.like(accepted.body, { status: "accepted", partner_account_id: carol.id });
  t.like((await list(carol))[0], {
    status: "accepted",
    partner_account_id: dave.id,
    partner_display_name: "Dave Example",
    email: daveEmail,
  });
});

test.serial("refusals: oneself, a link either way by address or account, unknown and unrelated ids, no token", async (t) => {
  const erin = await person("Erin Example");
  const frank = await person("Frank Example");
  const grace = await person("Grace Example");

  expectError(t, await invite(erin, erin.email.toUpperCase()), 400, "VALIDATION_ERROR");
  const bad = await invite(erin, "not an address");
  expectError(t, bad, 400, "VALIDATION_ERROR");
  t.regex((bad.body as ErrorBody).message, /email/);
  expectError(t, await api.authed(erin.token, "POST", "/v1/partners/invite", {}), 400, "VALIDATION_ERROR");
  expectError(t, await api.call("POST", "/v1/partners/invite", { email: frank.email }), 401, "UNAUTHORIZED");
  expectError(t, await api.call("GET", "/v1/partners"), 401, "UNAUTHORIZED");

  t.is((await invite(erin, frank.email)).status, 202);
  expectError(t, await invite(erin, frank.email), 409, "PARTNER_ALREADY_EXISTS");
  expectError(t, await invite(frank, erin.email), 409, "PARTNER_ALREADY_EXISTS");
  // By account: the invitee's new address is the same person.
  const moved = freshEmail("frank-new");
  t.is((await api.authed(frank.token, "PATCH", "/v1/accounts/me", { email: moved })).status, 200);
  expectError(t, await invite(erin, moved), 409, "PARTNER_ALREADY_EXISTS");
  const [link] = await list(erin);
  t.is((await accept(frank, link!.id)).status, 200);
  expectError(t, await invite(erin, moved), 409, "PARTNER_ALREADY_EXISTS");
  expectError(t, await invite(frank, erin.email), 409, "PARTNER_ALREADY_EXISTS");

  // Pending to an unknown address, then the same address again.
  const nobody = freshEmail("nobody");
  t.is((await invite(erin, nobody)).status, 202);
  expectError(t, await invite(erin, nobody.toUpperCase()), 409, "PARTNER_ALREADY_EXISTS");

  // Grace is no side of Erin's links: 404, as for ids that do not exist or are not UUIDs.
  for (const id of [link!.id, "0190f3a2-0000-7000-8000-000000000000", "not-a-uuid"]) {
    expectError(t, await accept(grace, id), 404, "PARTNER_NOT_FOUND");
    expectError(t, await remove(grace, id), 404, "PARTNER_NOT_FOUND");
  }
  t.deepEqual(await list(grace), []);
});

test.serial("either side removes a link, pending or accepted; it can be made again", async (t) => {
  const watch = await watchStream(mesh, "protection.v1.partner.removed", "PROTECTION");
  t.teardown(() => watch.stop());
  const hana = await person("Hana Example");
  const ivan = await person("Ivan Example");
  const nobody = freshEmail("pending");

  t.is((await invite(hana, ivan.email)).status, 202);
  t.is((await invite(hana, nobody)).status, 202);
  const [toIvan, toNobody] = await list(hana);
  // The inviter withdraws a pending invitation.
  const withdrawn = await remove(hana, toNobody!.id);
  t.is(withdrawn.status, 204);
  t.is(withdrawn.text, "");
  // The invitee removes an accepted link.
  t.is((await accept(ivan, toIvan!.id)).status, 200);
  t.is((await remove(ivan, toIvan!.id)).status, 204);
  expectError(t, await remove(ivan, toIvan!.id), 404, "PARTNER_NOT_FOUND");
  expectError(t, await accept(ivan, toIvan!.id), 404, "PARTNER_NOT_FOUND");
  t.deepEqual(await list(hana), []);
  t.deepEqual(await list(ivan), []);
  t.false(await isAcceptedPartner(mesh.db!.em().fork(), hana.id, ivan.id));

  const removed = await until(() => watch.seen.length >= 2 && watch.seen, "two removals");
  t.like(fromBinary(PartnerRemovedSchema, removed[0]!.data), {
    partnerId: toNobody!.id,
    inviterAccountId: hana.id,
    removedByAccountId: hana.id,
    wasAccepted: false,
  });
  t.is(fromBinary(PartnerRemovedSchema, removed[0]!.data).inviteeAccountId, undefined);
  t.like(fromBinary(PartnerRemovedSchema, removed[1]!.data), {
    partnerId: toIvan!.id,
    inviterAccountId: hana.id,
    inviteeAccountId: ivan.id,
    removedByAccountId: ivan.id,
    wasAccepted: true,
  });

  // Gone is gone: the other side may invite now.
  t.is((await invite(ivan, hana.email)).status, 202);
  t.like((await list(hana))[0], { direction: "incoming", status: "pending", partner_account_id: ivan.id });
});

test("invitations are limited per account (Protection:RateLimits:PartnerInvite): 429 with Retry-After, another account unaffected", async (t) => {
  const ada = await person("Ada Limit");
  const bob = await person("Bob Limit");
  for (let i = 0; i < 10; i++) {
    const res = await invite(ada, freshEmail(`limit${i}`));
    t.is(res.status, 202, JSON.stringify(res.body));
  }
  const over = await invite(ada, freshEmail("limit-over"));
  expectError(t, over, 429, "RATE_LIMIT_EXCEEDED");
  t.true(Number(over.headers.get("retry-after")) > 0);
  const other = await invite(bob, freshEmail("limit-bob"));
  t.is(other.status, 202);
});
