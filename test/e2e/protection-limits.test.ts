// Device protection's state shared through PostgreSQL, end to end: rate limits (429 with
// Retry-After) and the login lockout counted by one instance and enforced by another, the client
// address taken from the TCP connection only, a logout refused at once by the other instance, the
// generated signing key and configured roles kept across instances and restarts.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import test, { type ExecutionContext } from "ava";
import { loadGrpcPackage, unaryCall } from "../support/grpc-js.js";
import { type ErrorBody, freshEmail, PASSWORD, protectionClient } from "../support/protection.js";
import { realInfra } from "../support/real-infra.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { createTestDatabaseUrl } from "../support/test-database.js";

/**
 * A second instance on the first one's database. On real PostgreSQL both run at once, each with
 * its own state in memory. The embedded PostgreSQL belongs to one process, so there the second is
 * the first restarted on the same data directory: a new process state, the same database; what
 * must be shared can only have come through PostgreSQL either way.
 */
async function sharedDatabase(t: ExecutionContext, flags: string[]) {
  const dataDir = mkdtempSync(join(tmpdir(), "meshwork-protection-pair-"));
  const infra = realInfra();
  const db = infra.databaseUrl ? await createTestDatabaseUrl(infra.databaseUrl) : undefined;
  const start = (dir: string) => startTestMesh({ dataDir: dir, flags, ...(db ? { databaseUrl: db.url } : {}) });
  const meshes: TestMesh[] = [await start(dataDir)];
  const dirs = [dataDir];
  t.teardown(async () => {
    for (const mesh of meshes.reverse()) await mesh.close();
    await db?.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const first = meshes[0]!;
  return {
    first,
    /** Both alive at once (real PostgreSQL only). */
    concurrent: db !== undefined,
    async second(): Promise<TestMesh> {
      if (db) {
        const dir = mkdtempSync(join(tmpdir(), "meshwork-protection-pair-"));
        dirs.push(dir);
        const mesh = await start(dir);
        meshes.push(mesh);
        return mesh;
      }
      await first.close();
      meshes.splice(0, 1);
      const mesh = await start(dataDir);
      meshes.push(mesh);
      return mesh;
    },
  };
}

const expect429 = (t: ExecutionContext, res: { status: number; body: unknown; headers: Headers }, what: string) => {
  t.is(res.status, 429, what);
  t.is((res.body as ErrorBody).error, "RATE_LIMIT_EXCEEDED", what);
  const retryAfter = Number(res.headers.get("retry-after"));
  t.true(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 3600, `${what}: Retry-After ${retryAfter}`);
};

test.serial("register per client address is shared by two instances; the address is the TCP peer's only", async (t) => {
  const pair = await sharedDatabase(t, ["--Protection:RateLimits:Register:Limit=3"]);
  const a = protectionClient(pair.first.frontUrl("protection"));
  await a.register();
  await a.register();
  // A forwarded-for header, or the mesh's own metadata name, sent by the client changes nothing.
  const spoofed = { "x-forwarded-for": "203.0.113.7", "x-meshwork-client-address": "203.0.113.8" };
  const third = await a.call("POST", "/v1/auth/register", { email: freshEmail(), password: PASSWORD, display_name: "Third" }, spoofed);
  t.is(third.status, 201);
  const two = await pair.second();
  const b = protectionClient(two.frontUrl("protection"));
  const refused = await b.call("POST", "/v1/auth/register", { email: freshEmail(), password: PASSWORD, display_name: "Fourth" }, spoofed);
  expect429(t, refused, "the fourth registration, on the other instance");

  // A gRPC caller that claims another address on the service host is still itself.
  const pkg = loadGrpcPackage("protection/v1/auth.proto");
  const client = new pkg.protection.v1.AuthService(`127.0.0.1:${two.servicePort}`, grpc.credentials.createInsecure());
  t.teardown(() => client.close());
  const metadata = new grpc.Metadata();
  metadata.set("x-meshwork-client-address", "198.51.100.1");
  const err = (await unaryCall(client, "Register", { email: freshEmail(), password: PASSWORD, displayName: "Grpc" }, metadata).catch(
    (e: grpc.ServiceError) => e,
  )) as grpc.ServiceError;
  t.is(err.code, grpc.status.RESOURCE_EXHAUSTED);
  t.is(err.metadata.get("retry-after").length, 1);
});

test.serial("logins per e-mail and per address; the lockout holds even the right password", async (t) => {
  const pair = await sharedDatabase(t, [
    "--Protection:RateLimits:LoginPerEmail:Limit=4",
    "--Protection:RateLimits:LoginPerIp:Limit=12",
    "--Protection:Lockout:MaxFailures=3",
    "--Protection:Lockout:DurationSeconds=600",
  ]);
  const a = protectionClient(pair.first.frontUrl("protection"));
  const victim = (await a.register()).email;
  const other = (await a.register()).email;
  const third = (await a.register()).email;
  const login = (api: typeof a, email: string, password = PASSWORD) => api.call("POST", "/v1/auth/login", { email, password });

  // Two failures here, one on the second instance: the e-mail is locked there, the right password included.
  for (let i = 0; i < 2; i++) t.is((await login(a, victim, "wrong wrong wrong")).status, 401);
  for (let i = 0; i < 2; i++) t.is((await login(a, third)).status, 200);
  const b = protectionClient((await pair.second()).frontUrl("protection"));
  t.is((await login(b, victim, "wrong wrong wrong")).status, 401);
  const locked = await login(b, victim);
  expect429(t, locked, "the right password while locked");
  t.true(Number(locked.headers.get("retry-after")) > 500, "Retry-After counts down the lock");
  t.is((await login(b, other)).status, 200, "other e-mails are not locked");

  // Per e-mail: 4 in the window, two of them counted before.
  for (let i = 0; i < 2; i++) t.is((await login(b, third)).status, 200);
  expect429(t, await login(b, third), "the fifth login of one e-mail");

  // Per address: every attempt above counted (12 allowed from 127.0.0.1; 10 made so far).
  const answers: number[] = [];
  for (let i = 0; i < 3; i++) answers.push((await login(b, other)).status);
  t.deepEqual(answers, [200, 200, 429], "the thirteenth attempt from one address");
});

test.serial("a logout on one instance is refused at once on the other; the generated key and roles survive a restart", async (t) => {
  const admin = freshEmail("boss");
  const pair = await sharedDatabase(t, ["--Protection:RateLimits:LoginPerIp:Limit=1000", `--Protection:Authorities=${admin}`]);
  const a = protectionClient(pair.first.frontUrl("protection"));
  await a.register(admin);
  const tokens = await a.login(admin);
  const kept = await a.login(admin);
  const keysA = (await a.call<{ keys: { kid: string }[] }>("GET", "/.well-known/jwks.json")).body.keys;
  if (!pair.concurrent) t.is((await a.call("POST", "/v1/auth/logout", undefined, a.bearer(tokens.access_token))).status, 204);
  const b = protectionClient((await pair.second()).frontUrl("protection"));
  const keysB = (await b.call<{ keys: { kid: string }[] }>("GET", "/.well-known/jwks.json")).body.keys;
  t.deepEqual(keysA, keysB, "the generated key is the one kept in PostgreSQL");
  t.is((await b.authed(kept.access_token, "GET", "/v1/accounts/me")).status, 200, "a token issued by the first instance works");
  if (pair.concurrent) {
    t.is((await b.authed(tokens.access_token, "GET", "/v1/accounts/me")).status, 200, "verified and cached on the second instance");
    t.is((await a.call("POST", "/v1/auth/logout", undefined, a.bearer(tokens.access_token))).status, 204);
  }
  const after = await b.authed<ErrorBody>(tokens.access_token, "GET", "/v1/accounts/me");
  t.is(after.status, 401);
  t.is(after.body.error, "INVALID_TOKEN");
  t.is((await b.call("POST", "/v1/auth/refresh", { refresh_token: tokens.refresh_token })).status, 401);
  const role = JSON.parse(Buffer.from((await b.login(admin)).access_token.split(".")[1]!, "base64url").toString()).role;
  t.is(role, "authority");
});
