// Device protection, accounts and tokens, end to end through the REST front with fetch: health,
// registration rules, login, access tokens checked with `jose` against the published JWKS, forged
// tokens refused, refresh rotation (concurrent reuse included), logout, accounts, roles, events,
// and one rpc over @grpc/grpc-js with bearer metadata.
import { createPrivateKey, generateKeyPairSync, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import test from "ava";
import { createLocalJWKSet, decodeProtectedHeader, generateKeyPair, type JSONWebKeySet, jwtVerify, SignJWT } from "jose";
import { AccountRegisteredSchema, AccountUpdatedSchema, TokenFamilyRevokedSchema } from "../../gen/protection/v1/events_pb.js";
import { loadGrpcPackage, unaryCall } from "../support/grpc-js.js";
import { type ErrorBody, freshEmail, PASSWORD, protectionClient, type Tokens } from "../support/protection.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { watchStream } from "../support/event-watch.js";
import { until } from "../support/until.js";

const ISSUER = "meshwork-protection";
const keyDir = mkdtempSync(join(tmpdir(), "meshwork-jwt-key-"));
const keyFile = join(keyDir, "signing-key.pem");
const { privateKey: signingKey } = generateKeyPairSync("ed25519");
writeFileSync(keyFile, signingKey.export({ format: "pem", type: "pkcs8" }).toString());

const ADMIN = freshEmail("admin");
let mesh: TestMesh;
let api: ReturnType<typeof protectionClient>;

test.before(async () => {
  mesh = await startTestMesh({
    flags: [
      `--Protection:Jwt:SigningKeyFile=${keyFile}`,
      `--Protection:Admins=${ADMIN.toUpperCase()}`,
      // Every test registers and logs in from 127.0.0.1: the limits have their own suite.
      "--Protection:RateLimits:Register:Limit=100000",
      "--Protection:RateLimits:LoginPerIp:Limit=100000",
    ],
  });
  api = protectionClient(mesh.frontUrl("protection"));
});

test.after.always(async () => {
  await mesh?.close();
  rmSync(keyDir, { recursive: true, force: true });
});

async function jwks(): Promise<JSONWebKeySet> {
  const res = await api.call<JSONWebKeySet>("GET", "/.well-known/jwks.json");
  return res.body;
}

async function verified(token: string) {
  return jwtVerify(token, createLocalJWKSet(await jwks()), { issuer: ISSUER, audience: ISSUER, typ: "at+jwt", algorithms: ["EdDSA"] });
}

const expectError = (
  t: { is(a: unknown, b: unknown, m?: string): void },
  res: { status: number; body: unknown },
  status: number,
  code: string,
) => {
  t.is(res.status, status, JSON.stringify(res.body));
  t.is((res.body as ErrorBody).error, code);
  t.is(typeof (res.body as ErrorBody).message, "string");
};

async function account() {
  const email = freshEmail();
  const registered = await api.register(email);
  const tokens = await api.login(email);
  return { email, id: registered.account_id, tokens };
}

test("GET /health answers { status, version, db, cache } with no token", async (t) => {
  const res = await api.call("GET", "/health");
  t.is(res.status, 200);
  t.truthy(res.headers.get("x-request-id"));
  t.deepEqual(res.body, { status: "ok", version: (res.body as { version: string }).version, db: "ok", cache: "ok" });
  t.regex((res.body as { version: string }).version, /^\d+\.\d+\.\d+/);
});

test("register: 201 with the normalised e-mail; a taken e-mail in any case is 409", async (t) => {
  const local = `Reg-${randomUUID().slice(0, 8)}`;
  const res = await api.call<{ account_id: string; email: string; display_name: string }>("POST", "/v1/auth/register", {
    email: `  ${local}@Example.COM `,
    password: PASSWORD,
    display_name: "  Ada Lovelace  ",
  });
  t.is(res.status, 201);
  t.deepEqual(Object.keys(res.body).sort(), ["account_id", "display_name", "email"]);
  t.is(res.body.email, `${local.toLowerCase()}@example.com`);
  t.is(res.body.display_name, "Ada Lovelace");
  t.regex(res.body.account_id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, "a UUIDv7");
  const again = await api.call("POST", "/v1/auth/register", {
    email: `${local.toUpperCase()}@example.com`,
    password: PASSWORD,
    display_name: "X",
  });
  expectError(t, again, 409, "EMAIL_ALREADY_EXISTS");
});

test("register refuses each bad field with 400 VALIDATION_ERROR naming it", async (t) => {
  const email = freshEmail("rules");
  const base = { email, password: PASSWORD, display_name: "Rule Tester" };
  const cases: [object, RegExp][] = [
    [{ ...base, email: "not-an-email" }, /email/],
    [{ ...base, display_name: "   " }, /display_name/],
    [{ ...base, display_name: "x".repeat(101) }, /display_name/],
    [{ ...base, password: "short pass" }, /password/],
    [{ ...base, password: "p".repeat(129) }, /password/],
    [{ ...base, password: "z".repeat(20) }, /password/],
    [{ ...base, password: email }, /password/],
    [{ ...base, password: email.split("@")[0]!.padEnd(12, "") }, /password/],
    [{ ...base, display_name: "A long display name", password: "A long display name" }, /password/],
    [{ ...base, password: "password1234" }, /password/],
    [{ ...base, password: "123456789012" }, /password/],
    [{ ...base, password: "qwertyuiop123" }, /password/],
    [{ email, password: PASSWORD }, /display_name/],
    [{ ...base, extra: true }, /extra/],
  ];
  for (const [body, field] of cases) {
    const res = await api.call<ErrorBody>("POST", "/v1/auth/register", body);
    t.is(res.status, 400, JSON.stringify(body));
    t.is(res.body.error, "VALIDATION_ERROR", JSON.stringify(body));
    t.regex(res.body.message, field, JSON.stringify(body));
  }
  const bad = await api.call<ErrorBody>("POST", "/v1/auth/register", "{ not json", {});
  t.is(bad.status, 400);
  // None of those created the account.
  t.is((await api.call("POST", "/v1/auth/register", base)).status, 201);
});

test("login: a pair of tokens; wrong password and unknown e-mail get the same 401", async (t) => {
  const email = freshEmail();
  await api.register(email);
  const res = await api.call<Tokens>("POST", "/v1/auth/login", { email: ` ${email.toUpperCase()}`, password: PASSWORD });
  t.is(res.status, 200);
  t.deepEqual(Object.keys(res.body).sort(), ["access_token", "expires_in", "refresh_token"]);
  t.is(res.body.expires_in, 3600);
  t.regex(res.body.refresh_token, /^rtk_[0-9a-f]{64}$/);
  const wrong = await api.call<ErrorBody>("POST", "/v1/auth/login", { email, password: "not the password at all" });
  const unknown = await api.call<ErrorBody>("POST", "/v1/auth/login", { email: freshEmail("nobody"), password: PASSWORD });
  for (const r of [wrong, unknown]) {
    expectError(t, r, 401, "INVALID_CREDENTIALS");
    t.regex(r.headers.get("www-authenticate") ?? "", /^Bearer/);
  }
  t.is(wrong.body.message, unknown.body.message);
});

test("the access token is an EdDSA at+jwt that jose verifies against the JWKS, without the e-mail", async (t) => {
  const { email, id, tokens } = await account();
  const keys = await jwks();
  t.is(keys.keys.length, 1);
  t.like(keys.keys[0], { kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig" });
  const header = decodeProtectedHeader(tokens.access_token);
  t.deepEqual(header, { alg: "EdDSA", typ: "at+jwt", kid: keys.keys[0]!.kid });
  const { payload } = await verified(tokens.access_token);
  t.deepEqual(Object.keys(payload).sort(), ["aud", "exp", "iat", "iss", "jti", "role", "sid", "sub"]);
  t.is(payload.sub, id);
  t.is(payload.role, "user");
  t.is(payload.exp! - payload.iat!, tokens.expires_in);
  t.false(tokens.access_token.includes(Buffer.from(email).toString("base64url").slice(0, 10)));
  t.false(JSON.stringify(payload).includes(email));
  // The published key is the configured one.
  const publicJwk = signingKey.export({ format: "jwk" });
  t.is(keys.keys[0]!.x, publicJwk.x);
});

/** Tokens the service must refuse with 401 INVALID_TOKEN. */
async function forgeries(valid: string) {
  const [h, p] = valid.split(".") as [string, string];
  const claims = JSON.parse(Buffer.from(p, "base64url").toString()) as Record<string, unknown>;
  const { kid } = decodeProtectedHeader(valid);
  const now = Math.floor(Date.now() / 1000);
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const ours = createPrivateKey(signingKey.export({ format: "pem", type: "pkcs8" }));
  type SignKey = Parameters<SignJWT["sign"]>[0];
  const sign = (payload: object, key: SignKey = ours, alg = "EdDSA", typ = "at+jwt") =>
    new SignJWT(payload as Record<string, unknown>).setProtectedHeader({ alg, typ, kid: kid! }).sign(key);
  const foreign = (await generateKeyPair("EdDSA", { crv: "Ed25519" })).privateKey;
  const publicPem = Buffer.from((await import("node:crypto")).createPublicKey(ours).export({ format: "pem", type: "spki" }).toString());
  const publicJwkX = Buffer.from((await jwks()).keys[0]!.x!, "base64url");
  return {
    "alg none": `${b64({ alg: "none", typ: "at+jwt", kid })}.${p}.`,
    "HS256 keyed with the public key (PEM)": await sign(claims, new Uint8Array(publicPem), "HS256"),
    "HS256 keyed with the public key (raw)": await sign(claims, new Uint8Array(publicJwkX), "HS256"),
    "a foreign key under our kid": await sign(claims, foreign),
    "altered claims": `${h}.${b64({ ...claims, role: "admin" })}.${valid.split(".")[2]}`,
    "expired beyond the leeway": await sign({ ...claims, iat: now - 100, exp: now - 30 }),
    "issued in the future": await sign({ ...claims, iat: now + 120, exp: now + 3600 }),
    "another issuer": await sign({ ...claims, iss: "someone-else" }),
    "another audience": await sign({ ...claims, aud: "someone-else" }),
    "another type": await sign(claims, ours, "EdDSA", "JWT"),
    "no sid": await sign({ ...claims, sid: undefined }),
    garbage: "not.a.token",
  };
}

test("forged, altered, expired and foreign tokens are 401 INVALID_TOKEN; a missing one 401 UNAUTHORIZED", async (t) => {
  const { tokens } = await account();
  for (const [name, token] of Object.entries(await forgeries(tokens.access_token))) {
    const res = await api.authed<ErrorBody>(token, "GET", "/v1/accounts/me");
    expectError(t, res, 401, "INVALID_TOKEN");
    t.regex(res.headers.get("www-authenticate") ?? "", /^Bearer/, name);
  }
  const none = await api.call<ErrorBody>("GET", "/v1/accounts/me");
  expectError(t, none, 401, "UNAUTHORIZED");
  t.is(none.headers.get("www-authenticate"), "Bearer");
  // Within the 5 s leeway a just-expired token still passes; the valid one does.
  const now = Math.floor(Date.now() / 1000);
  const { payload } = await verified(tokens.access_token);
  const late = await new SignJWT({ ...payload, iat: now - 60, exp: now - 2 })
    .setProtectedHeader({ alg: "EdDSA", typ: "at+jwt", kid: decodeProtectedHeader(tokens.access_token).kid! })
    .sign(signingKey);
  t.is((await api.authed(late, "GET", "/v1/accounts/me")).status, 200);
  t.is((await api.authed(tokens.access_token, "GET", "/v1/accounts/me")).status, 200);
});

test("refresh rotates: the new pair works, the old refresh token reused revokes the family", async (t) => {
  const { tokens } = await account();
  const other = await api.login(
    (await api.call<{ email: string }>("GET", "/v1/accounts/me", undefined, api.bearer(tokens.access_token))).body.email,
  );
  const next = await api.call<Tokens>("POST", "/v1/auth/refresh", { refresh_token: tokens.refresh_token });
  t.is(next.status, 200);
  t.not(next.body.refresh_token, tokens.refresh_token);
  const claims = (await verified(next.body.access_token)).payload;
  t.is(claims.sid, (await verified(tokens.access_token)).payload.sid, "the same family");
  t.is((await api.authed(next.body.access_token, "GET", "/v1/accounts/me")).status, 200);

  const reuse = await api.call<ErrorBody>("POST", "/v1/auth/refresh", { refresh_token: tokens.refresh_token });
  expectError(t, reuse, 401, "TOKEN_FAMILY_REVOKED");
  t.regex(reuse.headers.get("www-authenticate") ?? "", /^Bearer/);
  expectError(t, await api.authed(next.body.access_token, "GET", "/v1/accounts/me"), 401, "INVALID_TOKEN");
  expectError(t, await api.authed(tokens.access_token, "GET", "/v1/accounts/me"), 401, "INVALID_TOKEN");
  const rotated = await api.call("POST", "/v1/auth/refresh", { refresh_token: next.body.refresh_token });
  t.is(rotated.status, 401, "the family's newest refresh token goes too");
  // Another login of the same account is another family: untouched.
  t.is((await api.authed(other.access_token, "GET", "/v1/accounts/me")).status, 200);
});

test("two refreshes with one token at once: exactly one wins and the family is revoked", async (t) => {
  const { tokens } = await account();
  const answers = await Promise.all(
    [0, 1].map(() => api.call<Tokens | ErrorBody>("POST", "/v1/auth/refresh", { refresh_token: tokens.refresh_token })),
  );
  const statuses = answers.map((a) => a.status).sort();
  t.deepEqual(statuses, [200, 401]);
  const winner = answers.find((a) => a.status === 200)!.body as Tokens;
  const loser = answers.find((a) => a.status === 401)!.body as ErrorBody;
  t.is(loser.error, "TOKEN_FAMILY_REVOKED");
  expectError(t, await api.authed(winner.access_token, "GET", "/v1/accounts/me"), 401, "INVALID_TOKEN");
  t.is((await api.call("POST", "/v1/auth/refresh", { refresh_token: winner.refresh_token })).status, 401);
});

test("unknown, malformed and expired refresh tokens are 401 INVALID_REFRESH_TOKEN", async (t) => {
  for (const token of [`rtk_${"0".repeat(64)}`, "rtk_short", "", "x".repeat(300)]) {
    const res = await api.call<ErrorBody>("POST", "/v1/auth/refresh", { refresh_token: token });
    t.is(res.status, token === "" ? 400 : 401, token);
    if (token !== "") t.is(res.body.error, "INVALID_REFRESH_TOKEN");
  }
  const { tokens } = await account();
  const { createHash } = await import("node:crypto");
  const hash = createHash("sha256").update(tokens.refresh_token).digest("hex");
  await mesh
    .db!.em()
    .getConnection()
    .execute(`update "protection_refresh_token" set "expires_at" = now() - interval '1 second' where "token_hash" = ?`, [hash]);
  expectError(t, await api.call("POST", "/v1/auth/refresh", { refresh_token: tokens.refresh_token }), 401, "INVALID_REFRESH_TOKEN");
  const stored = await mesh
    .db!.em()
    .getConnection()
    .execute(`select count(*)::int as n from "protection_refresh_token" where "token_hash" = ?`, [tokens.refresh_token]);
  t.is(stored[0].n, 0, "tokens are stored only as hashes");
});

test("logout: 204 without a body; only the caller's family is revoked, at once", async (t) => {
  const { email, tokens } = await account();
  const second = await api.login(email);
  const out = await api.call("POST", "/v1/auth/logout", undefined, api.bearer(tokens.access_token));
  t.is(out.status, 204);
  t.is(out.text, "");
  expectError(t, await api.authed(tokens.access_token, "GET", "/v1/accounts/me"), 401, "INVALID_TOKEN");
  expectError(t, await api.call("POST", "/v1/auth/refresh", { refresh_token: tokens.refresh_token }), 401, "TOKEN_FAMILY_REVOKED");
  t.is((await api.authed(second.access_token, "GET", "/v1/accounts/me")).status, 200);
  expectError(t, await api.call("POST", "/v1/auth/logout"), 401, "UNAUTHORIZED");
});

test("accounts: me, changes, another's public profile, unknown ids", async (t) => {
  const a = await account();
  const b = await account();
  const me = await api.authed<Record<string, unknown>>(a.tokens.access_token, "GET", "/v1/accounts/me");
  t.is(me.status, 200);
  t.deepEqual(Object.keys(me.body).sort(), ["created_at", "display_name", "email", "id"]);
  t.like(me.body, { id: a.id, email: a.email, display_name: "Test User" });
  t.false(Number.isNaN(Date.parse(me.body.created_at as string)));

  const renamed = await api.authed<Record<string, unknown>>(a.tokens.access_token, "PATCH", "/v1/accounts/me", {
    display_name: "  Renamed  ",
  });
  t.like(renamed.body, { display_name: "Renamed", email: a.email });
  const newEmail = freshEmail("moved");
  const moved = await api.authed<Record<string, unknown>>(a.tokens.access_token, "PATCH", "/v1/accounts/me", {
    email: newEmail.toUpperCase(),
  });
  t.like(moved.body, { email: newEmail, display_name: "Renamed" });
  expectError(t, await api.authed(a.tokens.access_token, "PATCH", "/v1/accounts/me", { email: b.email }), 409, "EMAIL_ALREADY_EXISTS");
  expectError(t, await api.authed(a.tokens.access_token, "PATCH", "/v1/accounts/me", { display_name: "" }), 400, "VALIDATION_ERROR");
  expectError(t, await api.authed(a.tokens.access_token, "PATCH", "/v1/accounts/me", { email: "nope" }), 400, "VALIDATION_ERROR");
  t.is((await api.login(newEmail)).expires_in, 3600, "the new e-mail logs in");

  const other = await api.authed<Record<string, unknown>>(a.tokens.access_token, "GET", `/v1/accounts/${b.id}`);
  t.is(other.status, 200);
  t.deepEqual(Object.keys(other.body).sort(), ["created_at", "display_name", "id"]);
  const own = await api.authed<Record<string, unknown>>(a.tokens.access_token, "GET", `/v1/accounts/${a.id}`);
  t.is(own.body.email, newEmail);
  expectError(t, await api.authed(a.tokens.access_token, "GET", `/v1/accounts/${randomUUID()}`), 404, "ACCOUNT_NOT_FOUND");
  expectError(t, await api.authed(a.tokens.access_token, "GET", "/v1/accounts/not-a-uuid"), 404, "ACCOUNT_NOT_FOUND");
  expectError(t, await api.call("GET", `/v1/accounts/${b.id}`), 401, "UNAUTHORIZED");
});

test("front refusals use the same codes: unknown path, wrong method, wrong media type", async (t) => {
  expectError(t, await api.call("GET", "/v1/nothing-here"), 404, "NOT_FOUND");
  expectError(t, await api.call("DELETE", "/v1/auth/login"), 405, "METHOD_NOT_ALLOWED");
  const res = await fetch(`${mesh.frontUrl("protection")}/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "text/plain" },
    body: "x",
  });
  t.is(res.status, 415);
  t.is(((await res.json()) as ErrorBody).error, "UNSUPPORTED_MEDIA_TYPE");
});

test("a configured admin registers as admin; the e-mail never appears in events", async (t) => {
  const watch = await watchStream(mesh, "protection.v1.>", "PROTECTION");
  t.teardown(() => watch.stop());
  const registered = await api.register(ADMIN.toLowerCase());
  const tokens = await api.login(ADMIN);
  t.is((await verified(tokens.access_token)).payload.role, "admin");
  const { sid } = (await verified(tokens.access_token)).payload;
  await api.authed(tokens.access_token, "PATCH", "/v1/accounts/me", { display_name: "Admin" });
  await api.call("POST", "/v1/auth/logout", undefined, api.bearer(tokens.access_token));
  const mine = await until(() => {
    const events = watch.seen.filter((e) => {
      const text = Buffer.from(e.data).toString("latin1");
      return text.includes(registered.account_id);
    });
    return events.length >= 3 && events;
  }, "the admin's three events");
  t.deepEqual(
    mine.map((e) => e.subject),
    ["protection.v1.account.registered", "protection.v1.account.updated", "protection.v1.token_family.revoked"],
  );
  t.like(fromBinary(AccountRegisteredSchema, mine[0]!.data), { accountId: registered.account_id, role: "admin" });
  t.like(fromBinary(AccountUpdatedSchema, mine[1]!.data), { accountId: registered.account_id, emailChanged: false });
  const revoked = fromBinary(TokenFamilyRevokedSchema, mine[2]!.data);
  t.is(revoked.sid, String(sid));
  t.is(revoked.reason, "logout");
  for (const e of mine) t.false(Buffer.from(e.data).toString("latin1").includes(ADMIN.split("@")[0]!), e.subject);
});

test("one rpc over @grpc/grpc-js with bearer metadata", async (t) => {
  const { id, email, tokens } = await account();
  const pkg = loadGrpcPackage("protection/v1/account.proto");
  const client = new pkg.protection.v1.AccountService(`127.0.0.1:${mesh.servicePort}`, grpc.credentials.createInsecure());
  t.teardown(() => client.close());
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${tokens.access_token}`);
  const me = await unaryCall<{ id: string; email: string }>(client, "GetMe", {}, metadata);
  t.is(me.id, id);
  t.is(me.email, email);
  const refused = await unaryCall(client, "GetMe", {}).catch((err: grpc.ServiceError) => err);
  t.is((refused as grpc.ServiceError).code, grpc.status.UNAUTHENTICATED);
  const bad = new grpc.Metadata();
  bad.set("authorization", "Bearer not.a.token");
  const invalid = await unaryCall(client, "GetMe", {}, bad).catch((err: grpc.ServiceError) => err);
  t.is((invalid as grpc.ServiceError).code, grpc.status.UNAUTHENTICATED);
});
