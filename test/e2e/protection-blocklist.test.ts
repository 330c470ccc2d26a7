// The signed blocklist end to end through the REST front with fetch: admin entries and compile,
// the version, delta and full answers verified as an agent would (libsodium-wrappers over the
// `canonicalize` package's RFC 8785 form of the body minus its signature), list_sha256 rebuilt,
// every refusal, two concurrent compilations making one version, the compile worker, reports
// with their rate limit, the events, and a restart that keeps the generated key.
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import test, { type ExecutionContext } from "ava";
import canonicalize from "canonicalize";
import sodium from "libsodium-wrappers";
import {
  BlocklistCompiledSchema,
  BlocklistEntryCreatedSchema,
  BlocklistEntryDeletedSchema,
  BlocklistEntryUpdatedSchema,
} from "../../gen/protection/v1/events_pb.js";
import { makeCsr } from "../support/device-csr.js";
import { watchStream } from "../support/event-watch.js";
import { type ErrorBody, freshEmail, protectionClient } from "../support/protection.js";
import { realInfra } from "../support/real-infra.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { createTestDatabaseUrl } from "../support/test-database.js";
import { until } from "../support/until.js";

interface Entry {
  id: string;
  domain: string;
  reason: string;
  category: string;
  notes: string | null;
  created_at: string;
  updated_at: string;
}
interface PublicKey {
  key_id: string;
  algorithm: string;
  public_key: string;
}
interface Version {
  version: number;
  entry_count: number;
  updated_at: string;
  list_sha256: string;
  key_id: string;
  signature: string;
}
interface Delta {
  from_version: number;
  to_version: number;
  added: string[];
  removed: string[];
  entry_count: number;
  list_sha256: string;
  key_id: string;
  signature: string;
}
interface Full {
  version: number;
  entry_count: number;
  list_sha256: string;
  key_id: string;
  domains: string[];
  signature: string;
}
interface Compiled {
  compiled: boolean;
  version: number;
  entry_count: number;
  added_count: number;
  removed_count: number;
}

const ADMIN = freshEmail("admin");
let mesh: TestMesh;
let api: ReturnType<typeof protectionClient>;
let admin: string;
let user: string;

test.before(async () => {
  await sodium.ready;
  mesh = await startTestMesh({
    flags: [
      `--Protection:Admins=${ADMIN}`,
      "--Protection:Blocklist:RetainedVersions=3",
      "--Protection:RateLimits:BlocklistReport:Limit=3",
      "--Protection:RateLimits:Register:Limit=100000",
      "--Protection:RateLimits:LoginPerIp:Limit=100000",
    ],
  });
  api = protectionClient(mesh.frontUrl("protection"));
  await api.register(ADMIN, "Admin");
  admin = (await api.login(ADMIN)).access_token;
  const someone = freshEmail("user");
  await api.register(someone, "User");
  user = (await api.login(someone)).access_token;
});

test.after.always(async () => {
  await mesh?.close();
});

const expectError = (t: ExecutionContext, res: { status: number; body: unknown }, status: number, code: string, what = "") => {
  t.is(res.status, status, `${what} ${JSON.stringify(res.body)}`);
  t.is((res.body as ErrorBody).error, code, what);
  t.is(typeof (res.body as ErrorBody).message, "string", what);
};

/** What an agent does: Ed25519 over the JCS of the body without its signature, with the published key. */
function verifies(body: { signature: string }, publicKey: string): boolean {
  const { signature, ...rest } = body as { signature: string } & Record<string, unknown>;
  const bytes = new TextEncoder().encode(canonicalize(rest)!);
  return sodium.crypto_sign_verify_detached(Buffer.from(signature, "base64"), bytes, Buffer.from(publicKey, "base64"));
}

const listSha256 = (domains: string[]) =>
  createHash("sha256")
    .update(domains.map((d) => `${d}\n`).join(""))
    .digest("hex");

const addEntry = async (domain: string, extra: Record<string, unknown> = {}) => {
  const res = await api.authed<Entry>(admin, "POST", "/v1/admin/blocklist/entries", { domain, ...extra });
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${res.text}`);
  return res.body;
};
const compile = async () => {
  const res = await api.authed<Compiled>(admin, "POST", "/v1/admin/blocklist/compile");
  if (res.status !== 200) throw new Error(`compile answered ${res.status}: ${res.text}`);
  return res.body;
};
const publicKey = async () => (await api.call<PublicKey>("GET", "/v1/blocklist/public-key")).body;

test.serial("before the first compilation: 404 NO_BLOCKLIST_VERSION; the public key is published", async (t) => {
  for (const path of ["/v1/blocklist/version", "/v1/blocklist/delta?from_version=0", "/v1/blocklist/full"]) {
    expectError(t, await api.call("GET", path), 404, "NO_BLOCKLIST_VERSION", path);
  }
  const key = await api.call<PublicKey>("GET", "/v1/blocklist/public-key");
  t.is(key.status, 200);
  t.deepEqual(Object.keys(key.body).sort(), ["algorithm", "key_id", "public_key"]);
  t.is(key.body.algorithm, "Ed25519");
  const raw = Buffer.from(key.body.public_key, "base64");
  t.is(raw.length, 32);
  t.is(key.body.key_id, createHash("sha256").update(raw).digest("hex").slice(0, 16));
  t.deepEqual(await compile(), { compiled: false, version: 0, entry_count: 0, added_count: 0, removed_count: 0 }, "nothing to compile");
});

test.serial("admin paths: no token 401 UNAUTHORIZED, another role 403 FORBIDDEN", async (t) => {
  for (const [method, path, body] of [
    ["POST", "/v1/admin/blocklist/entries", { domain: "example.com" }],
    ["GET", "/v1/admin/blocklist/entries", undefined],
    ["PATCH", "/v1/admin/blocklist/entries/0190b8a0-0000-7000-8000-000000000000", { notes: "x" }],
    ["DELETE", "/v1/admin/blocklist/entries/0190b8a0-0000-7000-8000-000000000000", undefined],
    ["POST", "/v1/admin/blocklist/compile", undefined],
  ] as const) {
    const anonymous = await api.call(method, path, body);
    expectError(t, anonymous, 401, "UNAUTHORIZED", `${method} ${path}`);
    t.regex(anonymous.headers.get("www-authenticate") ?? "", /^Bearer/);
    expectError(t, await api.authed(user, method, path, body), 403, "FORBIDDEN", `${method} ${path} as a user`);
  }
});

test.serial("entries: create (normalised), refusals, list with filters and paging, patch, delete", async (t) => {
  const watch = await watchStream(mesh, "protection.v1.blocklist_entry.>", "PROTECTION");
  t.teardown(() => watch.stop());
  const created = await api.authed<Entry>(admin, "POST", "/v1/admin/blocklist/entries", { domain: "Bücher.Example." });
  t.is(created.status, 201);
  t.deepEqual(Object.keys(created.body).sort(), ["category", "created_at", "domain", "id", "notes", "reason", "updated_at"]);
  t.like(created.body, { domain: "xn--bcher-kva.example", reason: "manual", category: "other", notes: null });
  t.regex(created.body.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7/);

  expectError(
    t,
    await api.authed(admin, "POST", "/v1/admin/blocklist/entries", { domain: "XN--BCHER-KVA.example" }),
    409,
    "ENTRY_ALREADY_EXISTS",
  );
  for (const domain of ["localhost", "-bad.example", "exa mple.com", "http://example.com/", "a..example", "1.2.3.4", ""]) {
    const res = await api.authed<ErrorBody>(admin, "POST", "/v1/admin/blocklist/entries", { domain });
    expectError(t, res, 400, "VALIDATION_ERROR", domain);
    t.regex(res.body.message, /domain/, domain);
  }
  expectError(
    t,
    await api.authed(admin, "POST", "/v1/admin/blocklist/entries", { domain: "ok.example", category: "chess" }),
    400,
    "VALIDATION_ERROR",
  );
  expectError(
    t,
    await api.authed(admin, "POST", "/v1/admin/blocklist/entries", { domain: "ok.example", reason: "whim" }),
    400,
    "VALIDATION_ERROR",
  );
  expectError(
    t,
    await api.authed(admin, "POST", "/v1/admin/blocklist/entries", { domain: "ok.example", notes: "n".repeat(1001) }),
    400,
    "VALIDATION_ERROR",
  );
  expectError(t, await api.authed(admin, "POST", "/v1/admin/blocklist/entries", {}), 400, "VALIDATION_ERROR", "no domain");

  const poker = await addEntry("poker-room.example", { category: "poker", reason: "import", notes: "from a list" });
  t.like(poker, { category: "poker", reason: "import", notes: "from a list" });
  await addEntry("bets.example", { category: "sports_betting" });

  const all = await api.authed<{ data: Entry[]; page: number; per_page: number; total: number }>(
    admin,
    "GET",
    "/v1/admin/blocklist/entries",
  );
  t.is(all.status, 200);
  t.like(all.body, { page: 1, per_page: 50, total: 3 });
  t.deepEqual(
    all.body.data.map((e) => e.domain),
    ["xn--bcher-kva.example", "poker-room.example", "bets.example"],
  );
  const byCategory = await api.authed<{ data: Entry[]; total: number }>(admin, "GET", "/v1/admin/blocklist/entries?category=poker");
  t.deepEqual(
    byCategory.body.data.map((e) => e.id),
    [poker.id],
  );
  const byReason = await api.authed<{ data: Entry[]; total: number }>(admin, "GET", "/v1/admin/blocklist/entries?reason=manual");
  t.is(byReason.body.total, 2);
  const paged = await api.authed<{ data: Entry[]; page: number; per_page: number; total: number }>(
    admin,
    "GET",
    "/v1/admin/blocklist/entries?page=2&per_page=0",
  );
  t.like(paged.body, { page: 2, per_page: 1, total: 3 });
  t.is(paged.body.data[0]!.domain, "poker-room.example");
  t.is((await api.authed<{ per_page: number }>(admin, "GET", "/v1/admin/blocklist/entries?per_page=500")).body.per_page, 200);
  expectError(t, await api.authed(admin, "GET", "/v1/admin/blocklist/entries?category=chess"), 400, "VALIDATION_ERROR");
  expectError(t, await api.authed(admin, "GET", "/v1/admin/blocklist/entries?page=0"), 400, "VALIDATION_ERROR");

  const patched = await api.authed<Entry>(admin, "PATCH", `/v1/admin/blocklist/entries/${poker.id}`, {
    category: "online_casino",
    notes: "",
  });
  t.is(patched.status, 200);
  t.like(patched.body, { id: poker.id, domain: "poker-room.example", category: "online_casino", reason: "import", notes: null });
  t.true(patched.body.updated_at > poker.updated_at);
  expectError(
    t,
    await api.authed(admin, "PATCH", `/v1/admin/blocklist/entries/${poker.id}`, { domain: "other.example" }),
    400,
    "VALIDATION_ERROR",
  );
  expectError(t, await api.authed(admin, "PATCH", `/v1/admin/blocklist/entries/${poker.id}`, { reason: "whim" }), 400, "VALIDATION_ERROR");
  const unknown = "0190b8a0-0000-7000-8000-000000000000";
  expectError(t, await api.authed(admin, "PATCH", `/v1/admin/blocklist/entries/${unknown}`, { notes: "x" }), 404, "ENTRY_NOT_FOUND");
  expectError(t, await api.authed(admin, "PATCH", "/v1/admin/blocklist/entries/not-a-uuid", { notes: "x" }), 404, "ENTRY_NOT_FOUND");

  const deleted = await api.authed(admin, "DELETE", `/v1/admin/blocklist/entries/${poker.id}`);
  t.is(deleted.status, 204);
  t.is(deleted.text, "");
  expectError(t, await api.authed(admin, "DELETE", `/v1/admin/blocklist/entries/${poker.id}`), 404, "ENTRY_NOT_FOUND");

  // On real NATS other suites' meshes publish on the same stream: only this suite's entries count.
  const ours = new Set([created.body.id, poker.id, all.body.data[2]!.id]);
  const mine = () => watch.seen.filter((e) => ours.has(fromBinary(BlocklistEntryDeletedSchema, e.data).entryId));
  await until(() => mine().length >= 5, "five entry events");
  const seen = mine();
  t.deepEqual(
    seen.map((e) => e.subject),
    [
      "protection.v1.blocklist_entry.created",
      "protection.v1.blocklist_entry.created",
      "protection.v1.blocklist_entry.created",
      "protection.v1.blocklist_entry.updated",
      "protection.v1.blocklist_entry.deleted",
    ],
  );
  t.like(fromBinary(BlocklistEntryCreatedSchema, seen[1]!.data), { entryId: poker.id, domain: "poker-room.example", category: "poker" });
  t.like(fromBinary(BlocklistEntryUpdatedSchema, seen[3]!.data), { entryId: poker.id, category: "online_casino" });
  t.like(fromBinary(BlocklistEntryDeletedSchema, seen[4]!.data), { entryId: poker.id, domain: "poker-room.example" });
});

test.serial("compile publishes signed versions; deltas and the full list verify; refusals of delta", async (t) => {
  const watch = await watchStream(mesh, "protection.v1.blocklist.>", "PROTECTION");
  t.teardown(() => watch.stop());
  const key = await publicKey();
  const first = await compile();
  t.deepEqual(first, { compiled: true, version: 1, entry_count: 2, added_count: 2, removed_count: 0 });
  t.deepEqual(await compile(), { compiled: false, version: 1, entry_count: 2, added_count: 0, removed_count: 0 });

  const v1 = await api.call<Version>("GET", "/v1/blocklist/version");
  t.is(v1.status, 200);
  t.deepEqual(Object.keys(v1.body).sort(), ["entry_count", "key_id", "list_sha256", "signature", "updated_at", "version"]);
  const domains1 = ["bets.example", "xn--bcher-kva.example"];
  t.like(v1.body, { version: 1, entry_count: 2, key_id: key.key_id, list_sha256: listSha256(domains1) });
  t.true(verifies(v1.body, key.public_key), "the version answer verifies");
  t.false(verifies({ ...v1.body, entry_count: 3 } as Version, key.public_key), "an altered answer does not");

  const full1 = await api.call<Full>("GET", "/v1/blocklist/full");
  t.is(full1.status, 200);
  t.deepEqual(full1.body.domains, domains1);
  t.like(full1.body, { version: 1, entry_count: 2, list_sha256: listSha256(domains1), key_id: key.key_id });
  t.true(verifies(full1.body, key.public_key), "the full list verifies");

  const from0 = await api.call<Delta>("GET", "/v1/blocklist/delta?from_version=0");
  t.is(from0.status, 200);
  t.deepEqual(from0.body, { ...from0.body, from_version: 0, to_version: 1, added: domains1, removed: [], entry_count: 2 });
  t.true(verifies(from0.body, key.public_key), "the delta from 0 verifies");
  const same = await api.call<Delta>("GET", "/v1/blocklist/delta?from_version=1");
  t.like(same.body, { from_version: 1, to_version: 1, added: [], removed: [], entry_count: 2, list_sha256: listSha256(domains1) });
  t.true(verifies(same.body, key.public_key), "the empty delta writes its empty lists and verifies");

  // Version 2: one added, one removed; version 3: the removed one back, another removed.
  const entries = (await api.authed<{ data: Entry[] }>(admin, "GET", "/v1/admin/blocklist/entries")).body.data;
  const bets = entries.find((e) => e.domain === "bets.example")!;
  await addEntry("casino.example", { category: "online_casino" });
  t.is((await api.authed(admin, "DELETE", `/v1/admin/blocklist/entries/${bets.id}`)).status, 204);
  t.like(await compile(), { compiled: true, version: 2, entry_count: 2, added_count: 1, removed_count: 1 });
  const d12 = await api.call<Delta>("GET", "/v1/blocklist/delta?from_version=1");
  t.like(d12.body, { from_version: 1, to_version: 2, added: ["casino.example"], removed: ["bets.example"] });
  t.is(d12.body.list_sha256, listSha256(["casino.example", "xn--bcher-kva.example"]));
  t.true(verifies(d12.body, key.public_key));

  await addEntry("bets.example");
  const buecher = entries.find((e) => e.domain === "xn--bcher-kva.example")!;
  t.is((await api.authed(admin, "DELETE", `/v1/admin/blocklist/entries/${buecher.id}`)).status, 204);
  t.like(await compile(), { compiled: true, version: 3, entry_count: 2 });
  const d13 = await api.call<Delta>("GET", "/v1/blocklist/delta?from_version=1");
  t.like(
    d13.body,
    { from_version: 1, to_version: 3, added: ["casino.example"], removed: ["xn--bcher-kva.example"] },
    "net: bets.example removed then added back",
  );
  t.true(verifies(d13.body, key.public_key));
  const d03 = await api.call<Delta>("GET", "/v1/blocklist/delta?from_version=0");
  t.like(d03.body, { from_version: 0, to_version: 3, added: ["bets.example", "casino.example"], removed: [] });
  t.is(d03.body.list_sha256, listSha256(["bets.example", "casino.example"]));
  t.true(verifies(d03.body, key.public_key));
  t.deepEqual((await api.call<Delta>("GET", "/v1/blocklist/delta?from_version=1")).body, d13.body, "a cached delta answers alike");

  // RetainedVersions is 3 here: from 0 is 3 behind (fine) until version 4.
  await addEntry("lotto.example", { category: "lottery" });
  t.like(await compile(), { compiled: true, version: 4, entry_count: 3 });
  expectError(t, await api.call("GET", "/v1/blocklist/delta?from_version=0"), 409, "FULL_SYNC_REQUIRED", "4 behind");
  t.is((await api.call("GET", "/v1/blocklist/delta?from_version=1")).status, 200, "3 behind");
  expectError(t, await api.call("GET", "/v1/blocklist/delta?from_version=5"), 409, "FULL_SYNC_REQUIRED", "ahead");
  for (const query of ["", "?from_version=-1", "?from_version=abc", "?from_version=1.5", "?from_version=99999999999"]) {
    expectError(t, await api.call("GET", `/v1/blocklist/delta${query}`), 400, "VALIDATION_ERROR", query || "missing");
  }
  const full4 = (await api.call<Full>("GET", "/v1/blocklist/full")).body;
  t.deepEqual(full4.domains, ["bets.example", "casino.example", "lotto.example"]);
  t.true(verifies(full4, key.public_key));
  const v4 = (await api.call<Version>("GET", "/v1/blocklist/version")).body;
  t.like(v4, { version: 4, entry_count: 3, list_sha256: full4.list_sha256 });
  t.true(verifies(v4, key.public_key));

  // Other suites' meshes may compile on the same stream: this suite's lists are told by their hash.
  const hashes = new Set([v1.body.list_sha256, d12.body.list_sha256, d03.body.list_sha256, full4.list_sha256]);
  const compiled = () => watch.seen.map((e) => fromBinary(BlocklistCompiledSchema, e.data)).filter((e) => hashes.has(e.listSha256));
  await until(() => compiled().length >= 4, "four compiled events");
  t.true(watch.seen.every((e) => e.subject === "protection.v1.blocklist.compiled"));
  t.like(compiled()[3], { version: 4, entryCount: 3, addedCount: 1, removedCount: 0, listSha256: full4.list_sha256 });
});

test.serial("two concurrent compilations make one version", async (t) => {
  const before = (await api.call<Version>("GET", "/v1/blocklist/version")).body.version;
  await addEntry("concurrent-one.example");
  await addEntry("concurrent-two.example");
  const answers = await Promise.all([compile(), compile(), compile()]);
  t.is(answers.filter((a) => a.compiled).length, 1, JSON.stringify(answers));
  for (const answer of answers) t.like(answer, { version: before + 1 });
  t.is((await api.call<Version>("GET", "/v1/blocklist/version")).body.version, before + 1);
  const delta = (await api.call<Delta>("GET", `/v1/blocklist/delta?from_version=${before}`)).body;
  t.deepEqual(delta.added, ["concurrent-one.example", "concurrent-two.example"]);
});

test.serial("reports: 202 for a bearer, refusals, and the per-account rate limit", async (t) => {
  expectError(t, await api.call("POST", "/v1/blocklist/report", { domain: "spin.example", reason: "user_report" }), 401, "UNAUTHORIZED");
  const ok = await api.authed<{ message: string }>(user, "POST", "/v1/blocklist/report", {
    domain: "Spin.Example",
    reason: "user_report",
    context: "seen in an ad",
  });
  t.is(ok.status, 202);
  t.is(typeof ok.body.message, "string");
  expectError(
    t,
    await api.authed(user, "POST", "/v1/blocklist/report", { domain: "spin.example", reason: "boredom" }),
    400,
    "VALIDATION_ERROR",
  );
  expectError(t, await api.authed(user, "POST", "/v1/blocklist/report", { domain: "spin", reason: "other" }), 400, "VALIDATION_ERROR");
  expectError(
    t,
    await api.authed(user, "POST", "/v1/blocklist/report", { domain: "spin.example", reason: "other", context: "c".repeat(1001) }),
    400,
    "VALIDATION_ERROR",
  );
  t.is(
    (await api.authed(user, "POST", "/v1/blocklist/report", { domain: "casino.example", reason: "heuristic" })).status,
    202,
    "listed: still 202",
  );
  t.is((await api.authed(user, "POST", "/v1/blocklist/report", { domain: "spin.example", reason: "other" })).status, 202);
  const limited = await api.authed<ErrorBody>(user, "POST", "/v1/blocklist/report", { domain: "spin.example", reason: "other" });
  expectError(t, limited, 429, "RATE_LIMIT_EXCEEDED", "the fourth accepted report in the window");
  const retryAfter = Number(limited.headers.get("retry-after"));
  t.true(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 3600, `Retry-After ${retryAfter}`);
  t.is((await api.authed(admin, "POST", "/v1/blocklist/report", { domain: "spin.example", reason: "other" })).status, 202, "per account");
});

test.serial("the worker compiles on its interval; a restart on the same database keeps the generated key", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "meshwork-blocklist-"));
  const infra = realInfra();
  const db = infra.databaseUrl ? await createTestDatabaseUrl(infra.databaseUrl) : undefined;
  const adminEmail = freshEmail("keeper");
  const start = () =>
    startTestMesh({
      dataDir,
      flags: [`--Protection:Admins=${adminEmail}`, "--Protection:Blocklist:CompileIntervalSeconds=5"],
      ...(db ? { databaseUrl: db.url } : {}),
    });
  let current: TestMesh | undefined = await start();
  t.teardown(async () => {
    await current?.close();
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const a = protectionClient(current.frontUrl("protection"));
  await a.register(adminEmail, "Keeper");
  const token = (await a.login(adminEmail)).access_token;
  t.is((await a.authed(token, "POST", "/v1/admin/blocklist/entries", { domain: "worker.example" })).status, 201);
  const v1 = await until(async () => {
    const res = await a.call<Version>("GET", "/v1/blocklist/version");
    return res.status === 200 && res.body;
  }, "the worker's compilation");
  const keyBefore = (await a.call<PublicKey>("GET", "/v1/blocklist/public-key")).body;
  t.true(verifies(v1, keyBefore.public_key));
  await current.close();
  current = undefined;

  current = await start();
  const b = protectionClient(current.frontUrl("protection"));
  t.deepEqual((await b.call<PublicKey>("GET", "/v1/blocklist/public-key")).body, keyBefore, "the key kept in PostgreSQL");
  const again = (await b.call<Version>("GET", "/v1/blocklist/version")).body;
  t.deepEqual(again, v1, "the version and its signature survive the restart");
  const full = (await b.call<Full>("GET", "/v1/blocklist/full")).body;
  t.deepEqual(full.domains, ["worker.example"]);
  t.true(verifies(full, keyBefore.public_key));
});

test.serial("a configured signing key signs; its key_id follows from the seed", async (t) => {
  await sodium.ready;
  const seed = Buffer.alloc(32, 7);
  const raw = sodium.crypto_sign_seed_keypair(seed).publicKey;
  const other = await startTestMesh({ flags: [`--Protection:Blocklist:SigningKey=${seed.toString("base64")}`] });
  t.teardown(() => other.close());
  const key = (await protectionClient(other.frontUrl("protection")).call<PublicKey>("GET", "/v1/blocklist/public-key")).body;
  t.is(key.public_key, Buffer.from(raw).toString("base64"));
  t.is(key.key_id, createHash("sha256").update(raw).digest("hex").slice(0, 16));
});

test.serial("devices hear of the blocklist: the signing key in their config, a new version in their next heartbeats", async (t) => {
  const enrollment = await api.authed<{ token: string }>(user, "POST", "/v1/enrollments", { tier: "self" });
  t.is(enrollment.status, 201, enrollment.text);
  const registered = await api.authed<{ device_id: string; blocklist_version: number; config: Record<string, unknown> }>(
    user,
    "POST",
    "/v1/devices",
    {
      enrollment_token: enrollment.body.token,
      platform: "linux",
      hostname: "blocklist-reader",
      agent_version: "1.0.0",
      client_cert_csr: (await makeCsr("ed25519")).pem,
    },
  );
  t.is(registered.status, 201, registered.text);
  const key = await publicKey();
  t.is(registered.body.config.blocklist_key_id, key.key_id);
  t.is(registered.body.config.blocklist_public_key, key.public_key);
  const current = (await api.call<Version>("GET", "/v1/blocklist/version")).body.version;
  t.is(registered.body.blocklist_version, current);

  const heartbeat = (version: number) =>
    api.authed<{ blocklist_version: number; commands: string[] }>(user, "POST", `/v1/devices/${registered.body.device_id}/heartbeat`, {
      status: "ok",
      blocklist_version: version,
      agent_version: "1.0.0",
      integrity_ok: true,
    });
  const upToDate = await heartbeat(current);
  t.is(upToDate.status, 200, upToDate.text);
  t.false(upToDate.body.commands.includes("force_blocklist_update"));

  await addEntry(`heartbeat-${Date.now().toString(36)}.example`);
  const compiled = await compile();
  t.true(compiled.compiled);
  // Heartbeats read the version from PostgreSQL at most once a second: the next ones tell.
  const told = await until(async () => {
    const res = await heartbeat(current);
    return res.body.blocklist_version === compiled.version ? res : undefined;
  }, "a heartbeat answering the new version");
  t.true(told.body.commands.includes("force_blocklist_update"));
});
