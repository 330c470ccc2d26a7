// Device protection's administration end to end through the REST front with fetch: the review
// queue fed by accounts' reports (one open item per domain, approve → an entry listed at the next
// compilation, reject, defer and its expiry, resolve by domain, bulk results per id in input
// order) and app signatures (CRUD, uniqueness, a full replacement), the refusals, and the events.
import { fromBinary } from "@bufbuild/protobuf";
import test, { type ExecutionContext } from "ava";
import {
  AppSignatureCreatedSchema,
  AppSignatureDeletedSchema,
  AppSignatureUpdatedSchema,
  ReviewItemApprovedSchema,
  ReviewItemDeferredSchema,
  ReviewItemReportedSchema,
} from "../../gen/protection/v1/events_pb.js";
import { watchStream } from "../support/event-watch.js";
import { type ErrorBody, freshEmail, protectionClient } from "../support/protection.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

interface Item {
  id: string;
  domain: string;
  status: string;
  report_count: number;
  sources: string[];
  reasons: string[];
  avg_confidence: number;
  contexts: string[];
  first_reported_at: string;
  last_reported_at: string;
  defer_until: string | null;
  notes: string | null;
  category: string | null;
  entry_id: string | null;
  resolved_at: string | null;
}
interface Page<T> {
  data: T[];
  page: number;
  per_page: number;
  total: number;
}
interface Bulk {
  results: { id: string; ok: boolean; status: string | null; error: string | null }[];
  succeeded: number;
  failed: number;
}
interface AppSignature {
  id: string;
  platform: string;
  identifier: string;
  identifier_type: string;
  display_name: string;
  category: string;
  created_at: string;
  updated_at: string;
}

const ADMIN = freshEmail("admin");
const UNKNOWN = "0190b8a0-0000-7000-8000-000000000000";
let mesh: TestMesh;
let api: ReturnType<typeof protectionClient>;
let admin: string;
let users: string[];

test.before(async () => {
  mesh = await startTestMesh({
    flags: [
      `--Protection:Admins=${ADMIN}`,
      "--Protection:RateLimits:Register:Limit=100000",
      "--Protection:RateLimits:LoginPerIp:Limit=100000",
    ],
  });
  api = protectionClient(mesh.frontUrl("protection"));
  await api.register(ADMIN, "Admin");
  admin = (await api.login(ADMIN)).access_token;
  users = [];
  for (const name of ["ann", "ben"]) {
    const email = freshEmail(name);
    await api.register(email, name);
    users.push((await api.login(email)).access_token);
  }
});

test.after.always(async () => {
  await mesh?.close();
});

const expectError = (t: ExecutionContext, res: { status: number; body: unknown }, status: number, code: string, what = "") => {
  t.is(res.status, status, `${what} ${JSON.stringify(res.body)}`);
  t.is((res.body as ErrorBody).error, code, what);
  t.is(typeof (res.body as ErrorBody).message, "string", what);
};

const report = async (token: string, domain: string, reason = "user_report", context?: string) => {
  const res = await api.authed(token, "POST", "/v1/blocklist/report", { domain, reason, ...(context ? { context } : {}) });
  if (res.status !== 202) throw new Error(`report answered ${res.status}: ${res.text}`);
};
const items = async (path: string) => {
  const res = await api.authed<Page<Item>>(admin, "GET", path);
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${res.text}`);
  return res.body;
};
const openItem = async (domain: string) =>
  (await items("/v1/admin/review-queue?per_page=200")).data.find((i) => i.domain === domain && ["pending", "deferred"].includes(i.status))!;
const post = <B>(path: string, body?: unknown) => api.authed<B>(admin, "POST", path, body);

const ITEM_FIELDS = [
  "avg_confidence",
  "category",
  "contexts",
  "defer_until",
  "domain",
  "entry_id",
  "first_reported_at",
  "id",
  "last_reported_at",
  "notes",
  "reasons",
  "report_count",
  "resolved_at",
  "sources",
  "status",
];

test.serial("admin paths: no token 401 UNAUTHORIZED, another role 403 FORBIDDEN", async (t) => {
  for (const [method, path, body] of [
    ["GET", "/v1/admin/blocklist/review-queue", undefined],
    ["GET", "/v1/admin/review-queue", undefined],
    ["GET", `/v1/admin/review-queue/${UNKNOWN}`, undefined],
    ["POST", `/v1/admin/review-queue/${UNKNOWN}/approve`, {}],
    ["POST", `/v1/admin/review-queue/${UNKNOWN}/reject`, {}],
    ["POST", `/v1/admin/review-queue/${UNKNOWN}/defer`, { defer_until: "2100-01-01T00:00:00Z" }],
    ["POST", "/v1/admin/review-queue/bulk-approve", { ids: [UNKNOWN] }],
    ["POST", "/v1/admin/review-queue/bulk-reject", { ids: [UNKNOWN] }],
    ["POST", "/v1/admin/blocklist/review-queue/spin.example/resolve", { action: "reject" }],
    ["POST", "/v1/admin/app-signatures", {}],
    ["GET", "/v1/admin/app-signatures", undefined],
    ["GET", `/v1/admin/app-signatures/${UNKNOWN}`, undefined],
    ["PUT", `/v1/admin/app-signatures/${UNKNOWN}`, {}],
    ["DELETE", `/v1/admin/app-signatures/${UNKNOWN}`, undefined],
  ] as const) {
    expectError(t, await api.call(method, path, body), 401, "UNAUTHORIZED", `${method} ${path}`);
    expectError(t, await api.authed(users[0]!, method, path, body), 403, "FORBIDDEN", `${method} ${path} as a user`);
  }
});

test.serial("reports gather in one open item per domain; a listed domain opens none; get and list", async (t) => {
  const watch = await watchStream(mesh, "protection.v1.review_item.>", "PROTECTION");
  t.teardown(() => watch.stop());
  await report(users[0]!, "Spin.Example", "user_report", "an ad on a forum");
  await report(users[1]!, "spin.example.", "heuristic");
  await report(users[1]!, "spin.example", "user_report");
  t.is((await post("/v1/admin/blocklist/entries", { domain: "listed.example" })).status, 201);
  await report(users[0]!, "listed.example");

  const pending = await items("/v1/admin/blocklist/review-queue");
  t.like(pending, { page: 1, per_page: 50, total: 1 });
  const item = pending.data[0]!;
  t.deepEqual(Object.keys(item).sort(), ITEM_FIELDS);
  t.like(item, {
    domain: "spin.example",
    status: "pending",
    report_count: 3,
    sources: ["agent"],
    reasons: ["user_report", "heuristic"],
    avg_confidence: 0.5,
    contexts: ["an ad on a forum"],
    defer_until: null,
    notes: null,
    category: null,
    entry_id: null,
    resolved_at: null,
  });
  t.true(item.first_reported_at <= item.last_reported_at);
  const one = await api.authed<Item>(admin, "GET", `/v1/admin/review-queue/${item.id}`);
  t.is(one.status, 200);
  t.deepEqual(one.body, item);
  expectError(t, await api.authed(admin, "GET", `/v1/admin/review-queue/${UNKNOWN}`), 404, "REVIEW_ITEM_NOT_FOUND");
  expectError(t, await api.authed(admin, "GET", "/v1/admin/review-queue/not-a-uuid"), 404, "REVIEW_ITEM_NOT_FOUND");
  t.is((await items("/v1/admin/review-queue?status=pending")).total, 1);
  t.is((await items("/v1/admin/review-queue?status=approved")).total, 0);
  expectError(t, await api.authed(admin, "GET", "/v1/admin/review-queue?status=open"), 400, "VALIDATION_ERROR");

  // On real NATS other suites' meshes publish on the same stream: only this item's events count.
  const mine = () => watch.seen.filter((e) => fromBinary(ReviewItemReportedSchema, e.data).reviewItemId === item.id);
  await until(() => mine().length >= 3, "three reported events");
  t.true(mine().every((e) => e.subject === "protection.v1.review_item.reported"));
  t.like(fromBinary(ReviewItemReportedSchema, mine()[2]!.data), {
    reviewItemId: item.id,
    domain: "spin.example",
    source: "agent",
    reportCount: 3,
  });
});

test.serial("approve makes the entry at once, listed at the next compilation; a resolved item is 409", async (t) => {
  const watch = await watchStream(mesh, "protection.v1.review_item.approved", "PROTECTION");
  t.teardown(() => watch.stop());
  const item = await openItem("spin.example");
  expectError(t, await post(`/v1/admin/review-queue/${item.id}/approve`, { category: "chess" }), 400, "VALIDATION_ERROR");
  const approved = await post<Item>(`/v1/admin/review-queue/${item.id}/approve`, { category: "online_casino", notes: "checked" });
  t.is(approved.status, 200);
  t.like(approved.body, { id: item.id, status: "approved", category: "online_casino", notes: "checked" });
  t.truthy(approved.body.entry_id);
  t.truthy(approved.body.resolved_at);
  const entries = await api.authed<Page<{ id: string; domain: string; reason: string; category: string }>>(
    admin,
    "GET",
    "/v1/admin/blocklist/entries?reason=agent_report",
  );
  t.deepEqual(
    entries.body.data.map((e) => [e.id, e.domain, e.category]),
    [[approved.body.entry_id, "spin.example", "online_casino"]],
  );
  for (const action of ["approve", "reject"]) {
    expectError(t, await post(`/v1/admin/review-queue/${item.id}/${action}`), 409, "ALREADY_RESOLVED", action);
  }
  expectError(t, await post(`/v1/admin/review-queue/${item.id}/defer`, { defer_until: "2100-01-01T00:00:00Z" }), 409, "ALREADY_RESOLVED");
  expectError(t, await post(`/v1/admin/review-queue/${UNKNOWN}/approve`), 404, "REVIEW_ITEM_NOT_FOUND");
  t.is((await post<{ compiled: boolean }>("/v1/admin/blocklist/compile")).body.compiled, true);
  const full = await api.call<{ domains: string[] }>("GET", "/v1/blocklist/full");
  t.true(full.body.domains.includes("spin.example"));
  await report(users[0]!, "spin.example");
  t.is((await items("/v1/admin/blocklist/review-queue")).total, 0, "a listed domain opens no new item");
  const approvedEvent = await until(
    () => watch.seen.map((e) => fromBinary(ReviewItemApprovedSchema, e.data)).find((e) => e.reviewItemId === item.id),
    "the approved event",
  );
  t.like(approvedEvent, {
    reviewItemId: item.id,
    domain: "spin.example",
    entryId: approved.body.entry_id!,
  });
});

test.serial("reject; a rejected domain reported again opens a new item", async (t) => {
  await report(users[0]!, "maybe.example");
  const item = await openItem("maybe.example");
  const rejected = await post<Item>(`/v1/admin/review-queue/${item.id}/reject`, { notes: "a news site" });
  t.is(rejected.status, 200);
  t.like(rejected.body, { status: "rejected", notes: "a news site", entry_id: null });
  t.truthy(rejected.body.resolved_at);
  await report(users[1]!, "maybe.example");
  const again = await openItem("maybe.example");
  t.not(again.id, item.id);
  t.like(again, { status: "pending", report_count: 1 });
  t.is(((await post<Item>(`/v1/admin/review-queue/${again.id}/reject`)).body as Item).status, "rejected", "no body needed");
});

test.serial("defer holds an item until defer_until, then it shows pending again", async (t) => {
  const watch = await watchStream(mesh, "protection.v1.review_item.deferred", "PROTECTION");
  t.teardown(() => watch.stop());
  await report(users[0]!, "later.example");
  const item = await openItem("later.example");
  expectError(
    t,
    await post(`/v1/admin/review-queue/${item.id}/defer`, { defer_until: new Date(Date.now() - 1000).toISOString() }),
    400,
    "VALIDATION_ERROR",
  );
  expectError(t, await post(`/v1/admin/review-queue/${item.id}/defer`, {}), 400, "VALIDATION_ERROR", "no defer_until");
  expectError(
    t,
    await post(`/v1/admin/review-queue/${UNKNOWN}/defer`, { defer_until: "2100-01-01T00:00:00Z" }),
    404,
    "REVIEW_ITEM_NOT_FOUND",
  );
  const until3s = new Date(Date.now() + 3000).toISOString();
  const deferred = await post<Item>(`/v1/admin/review-queue/${item.id}/defer`, { defer_until: until3s, notes: "ask again" });
  t.is(deferred.status, 200);
  t.like(deferred.body, { status: "deferred", notes: "ask again", defer_until: until3s });
  const pendingNow = await items("/v1/admin/blocklist/review-queue");
  t.false(
    pendingNow.data.some((i) => i.id === item.id),
    "held while deferred",
  );
  t.true((await items("/v1/admin/review-queue?status=deferred")).data.some((i) => i.id === item.id));
  await report(users[1]!, "later.example");
  t.like(await openItem("later.example"), { id: item.id, report_count: 2, status: "deferred" }, "a report joins the deferred item");
  const back = await until(
    async () => (await items("/v1/admin/blocklist/review-queue")).data.find((i) => i.id === item.id),
    "the deferred item back in the queue",
  );
  t.like(back, { status: "pending", defer_until: until3s });
  t.true((await items("/v1/admin/review-queue?status=pending")).data.some((i) => i.id === item.id));
  t.false((await items("/v1/admin/review-queue?status=deferred")).data.some((i) => i.id === item.id));
  const deferredEvent = await until(
    () => watch.seen.map((e) => fromBinary(ReviewItemDeferredSchema, e.data)).find((e) => e.reviewItemId === item.id),
    "the deferred event",
  );
  t.like(deferredEvent, { reviewItemId: item.id, domain: "later.example" });
  t.is((await post<Item>(`/v1/admin/review-queue/${item.id}/approve`)).body.category, "other", "category defaults to other");
});

test.serial("resolve by domain acts on the domain's open item", async (t) => {
  await report(users[0]!, "resolve-me.example");
  await report(users[0]!, "drop-me.example");
  expectError(t, await post("/v1/admin/blocklist/review-queue/resolve-me.example/resolve", { action: "maybe" }), 400, "VALIDATION_ERROR");
  expectError(t, await post("/v1/admin/blocklist/review-queue/resolve-me.example/resolve", {}), 400, "VALIDATION_ERROR", "no action");
  expectError(
    t,
    await post("/v1/admin/blocklist/review-queue/nothing-open.example/resolve", { action: "reject" }),
    404,
    "REVIEW_ITEM_NOT_FOUND",
  );
  const approved = await post<{ domain: string; status: string; entry_id: string | null }>(
    "/v1/admin/blocklist/review-queue/Resolve-Me.Example/resolve",
    { action: "approve", category: "poker", notes: "seen" },
  );
  t.is(approved.status, 200);
  t.deepEqual(Object.keys(approved.body).sort(), ["domain", "entry_id", "status"]);
  t.like(approved.body, { domain: "resolve-me.example", status: "approved" });
  t.truthy(approved.body.entry_id);
  const rejected = await post("/v1/admin/blocklist/review-queue/drop-me.example/resolve", { action: "reject" });
  t.deepEqual(rejected.body, { domain: "drop-me.example", status: "rejected", entry_id: null });
  expectError(
    t,
    await post("/v1/admin/blocklist/review-queue/drop-me.example/resolve", { action: "reject" }),
    404,
    "REVIEW_ITEM_NOT_FOUND",
    "none open",
  );
});

test.serial("bulk approve and reject: one result per id, in input order", async (t) => {
  for (const domain of ["bulk-a.example", "bulk-b.example", "bulk-c.example"]) await report(users[1]!, domain);
  const a = await openItem("bulk-a.example");
  const b = await openItem("bulk-b.example");
  const c = await openItem("bulk-c.example");
  const res = await post<Bulk>("/v1/admin/review-queue/bulk-approve", { ids: [a.id, UNKNOWN, "nope", b.id, a.id] });
  t.is(res.status, 200);
  t.deepEqual(res.body, {
    results: [
      { id: a.id, ok: true, status: "approved", error: null },
      { id: UNKNOWN, ok: false, status: null, error: "REVIEW_ITEM_NOT_FOUND" },
      { id: "nope", ok: false, status: null, error: "REVIEW_ITEM_NOT_FOUND" },
      { id: b.id, ok: true, status: "approved", error: null },
      { id: a.id, ok: false, status: "approved", error: "ALREADY_RESOLVED" },
    ],
    succeeded: 2,
    failed: 3,
  });
  const rejected = await post<Bulk>("/v1/admin/review-queue/bulk-reject", { ids: [b.id, c.id] });
  t.deepEqual(rejected.body, {
    results: [
      { id: b.id, ok: false, status: "approved", error: "ALREADY_RESOLVED" },
      { id: c.id, ok: true, status: "rejected", error: null },
    ],
    succeeded: 1,
    failed: 1,
  });
  expectError(t, await post("/v1/admin/review-queue/bulk-approve", { ids: [] }), 400, "VALIDATION_ERROR", "no ids");
  expectError(t, await post("/v1/admin/review-queue/bulk-reject", {}), 400, "VALIDATION_ERROR", "ids left out");
  const many = Array.from({ length: 101 }, () => UNKNOWN);
  expectError(t, await post("/v1/admin/review-queue/bulk-approve", { ids: many }), 400, "VALIDATION_ERROR", "101 ids");
  const all = await items("/v1/admin/review-queue?status=approved&per_page=1&page=2");
  t.like(all, { page: 2, per_page: 1 });
  t.is(all.data.length, 1);
});

test.serial("app signatures: create, refusals, list with filters, get, full replacement, delete", async (t) => {
  const watch = await watchStream(mesh, "protection.v1.app_signature.>", "PROTECTION");
  t.teardown(() => watch.stop());
  const cert = "AB".repeat(32);
  const created = await post<AppSignature>("/v1/admin/app-signatures", {
    platform: "android",
    identifier: cert,
    identifier_type: "cert_sha256",
    display_name: "Lucky Spins",
    category: "online_casino",
  });
  t.is(created.status, 201);
  t.deepEqual(Object.keys(created.body).sort(), [
    "category",
    "created_at",
    "display_name",
    "id",
    "identifier",
    "identifier_type",
    "platform",
    "updated_at",
  ]);
  t.like(created.body, { platform: "android", identifier: cert.toLowerCase(), identifier_type: "cert_sha256" });
  const duplicate = {
    platform: "android",
    identifier: cert.toLowerCase(),
    identifier_type: "cert_sha256",
    display_name: "Again",
    category: "other",
  };
  expectError(t, await post("/v1/admin/app-signatures", duplicate), 409, "APP_SIGNATURE_ALREADY_EXISTS");
  const bundle = await post<AppSignature>("/v1/admin/app-signatures", {
    platform: "ios",
    identifier: "com.example.poker",
    identifier_type: "bundle_id",
    display_name: "Poker Pal",
    category: "poker",
  });
  t.is(bundle.status, 201);
  const good = {
    platform: "windows",
    identifier: "bet.exe",
    identifier_type: "executable_name",
    display_name: "Bet",
    category: "sports_betting",
  };
  for (const [field, bad] of [
    ["platform", { ...good, platform: "beos" }],
    ["identifier_type", { ...good, identifier_type: "hash" }],
    ["identifier", { ...good, identifier_type: "cert_sha256", identifier: "abc" }],
    ["category", { ...good, category: "chess" }],
    ["display_name", { ...good, display_name: " " }],
    ["missing category", { ...good, category: undefined }],
  ] as const) {
    expectError(t, await post("/v1/admin/app-signatures", bad), 400, "VALIDATION_ERROR", field);
  }

  const list = await api.authed<Page<AppSignature>>(admin, "GET", "/v1/admin/app-signatures");
  t.like(list.body, { page: 1, per_page: 50, total: 2 });
  t.deepEqual(
    list.body.data.map((s) => s.id),
    [created.body.id, bundle.body.id],
  );
  t.deepEqual(
    (await api.authed<Page<AppSignature>>(admin, "GET", "/v1/admin/app-signatures?platform=ios")).body.data.map((s) => s.id),
    [bundle.body.id],
  );
  t.is((await api.authed<Page<AppSignature>>(admin, "GET", "/v1/admin/app-signatures?category=online_casino")).body.total, 1);
  t.like((await api.authed<Page<AppSignature>>(admin, "GET", "/v1/admin/app-signatures?per_page=1&page=2")).body, { per_page: 1, page: 2 });
  expectError(t, await api.authed(admin, "GET", "/v1/admin/app-signatures?platform=beos"), 400, "VALIDATION_ERROR");
  const one = await api.authed<AppSignature>(admin, "GET", `/v1/admin/app-signatures/${bundle.body.id}`);
  t.deepEqual(one.body, bundle.body);
  expectError(t, await api.authed(admin, "GET", `/v1/admin/app-signatures/${UNKNOWN}`), 404, "APP_SIGNATURE_NOT_FOUND");
  expectError(t, await api.authed(admin, "GET", "/v1/admin/app-signatures/nope"), 404, "APP_SIGNATURE_NOT_FOUND");

  const replacement = {
    platform: "macos",
    identifier: "com.example.poker",
    identifier_type: "bundle_id",
    display_name: "Poker Pal 2",
    category: "poker",
  };
  const replaced = await api.authed<AppSignature>(admin, "PUT", `/v1/admin/app-signatures/${bundle.body.id}`, replacement);
  t.is(replaced.status, 200);
  t.like(replaced.body, { ...replacement, id: bundle.body.id, created_at: bundle.body.created_at });
  t.true(replaced.body.updated_at > bundle.body.updated_at);
  const { display_name: _, ...partial } = replacement;
  expectError(
    t,
    await api.authed(admin, "PUT", `/v1/admin/app-signatures/${bundle.body.id}`, partial),
    400,
    "VALIDATION_ERROR",
    "a missing field",
  );
  expectError(
    t,
    await api.authed(admin, "PUT", `/v1/admin/app-signatures/${bundle.body.id}`, duplicate),
    409,
    "APP_SIGNATURE_ALREADY_EXISTS",
  );
  expectError(t, await api.authed(admin, "PUT", `/v1/admin/app-signatures/${UNKNOWN}`, replacement), 404, "APP_SIGNATURE_NOT_FOUND");

  const deleted = await api.authed(admin, "DELETE", `/v1/admin/app-signatures/${bundle.body.id}`);
  t.is(deleted.status, 204);
  expectError(t, await api.authed(admin, "DELETE", `/v1/admin/app-signatures/${bundle.body.id}`), 404, "APP_SIGNATURE_NOT_FOUND");

  const ours = new Set([created.body.id, bundle.body.id]);
  const mine = () => watch.seen.filter((e) => ours.has(fromBinary(AppSignatureDeletedSchema, e.data).appSignatureId));
  await until(() => mine().length >= 4, "four app signature events");
  const seen = mine();
  t.deepEqual(
    seen.map((e) => e.subject),
    [
      "protection.v1.app_signature.created",
      "protection.v1.app_signature.created",
      "protection.v1.app_signature.updated",
      "protection.v1.app_signature.deleted",
    ],
  );
  t.like(fromBinary(AppSignatureCreatedSchema, seen[0]!.data), {
    appSignatureId: created.body.id,
    platform: "android",
    identifierType: "cert_sha256",
  });
  t.like(fromBinary(AppSignatureUpdatedSchema, seen[2]!.data), { appSignatureId: bundle.body.id, platform: "macos" });
  t.like(fromBinary(AppSignatureDeletedSchema, seen[3]!.data), { appSignatureId: bundle.body.id });
});
