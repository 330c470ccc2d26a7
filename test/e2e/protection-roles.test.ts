// Platform roles end to end: `meshwork protection set-role` on the configured database, and
// Protection:Authorities applied at start to an account that already exists; the new role shows in
// the next refreshed token, and each change is a protection.v1.account.role_changed event.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import test from "ava";
import { AccountRoleChangedSchema } from "../../gen/protection/v1/events_pb.js";
import type { BusMessage } from "../../services/runtime/bus/index.js";
import { freshEmail, protectionClient, type Tokens } from "../support/protection.js";
import { realInfra } from "../support/real-infra.js";
import { startTestMesh } from "../support/start-mesh.js";
import { createTestDatabaseUrl } from "../support/test-database.js";
import { until } from "../support/until.js";

const bin = join(process.cwd(), "bin/meshwork.js");
const roleOf = (token: string) => JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString()).role as string;

test("set-role and configured authorities change roles; the next refreshed token carries them", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "meshwork-roles-"));
  const infra = realInfra();
  const db = infra.databaseUrl ? await createTestDatabaseUrl(infra.databaseUrl) : undefined;
  t.teardown(async () => {
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const where = [`--Data:Dir=${dataDir}`, ...(db ? [`--Database:Url=${db.url}`] : [])];
  const start = (flags: string[] = []) => startTestMesh({ dataDir, flags, ...(db ? { databaseUrl: db.url } : {}) });

  const alice = freshEmail("alice");
  const bob = freshEmail("bob");
  const first = await start();
  const api = protectionClient(first.frontUrl("protection"));
  const aliceId = (await api.register(alice)).account_id;
  const bobId = (await api.register(bob)).account_id;
  const aliceTokens = await api.login(alice);
  const bobTokens = await api.login(bob);
  t.is(roleOf(aliceTokens.access_token), "user");
  await first.close();

  // The command runs on the database the settings name (the embedded one is free once the mesh stopped).
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, [bin, "protection", "set-role", ...args, ...where], {
      encoding: "utf8",
      env: { ...process.env, DATABASE_URL: "", NATS_URL: "" },
    });
  const set = cli(alice.toUpperCase(), "admin");
  t.is(set.status, 0, set.stderr);
  t.is(set.stdout.trim(), `${alice} is now admin`);
  const unknown = cli(freshEmail("nobody"), "admin");
  t.is(unknown.status, 2);
  t.regex(unknown.stderr, /no account has the e-mail/);
  const badRole = cli(alice, "emperor");
  t.is(badRole.status, 2);
  t.regex(badRole.stderr, /usage: meshwork protection set-role EMAIL user\|authority\|admin/);

  const second = await start([`--Protection:Authorities=${bob}`]);
  t.teardown(() => second.close());
  const again = protectionClient(second.frontUrl("protection"));
  const refresh = async (tokens: Tokens) =>
    (await again.call<Tokens>("POST", "/v1/auth/refresh", { refresh_token: tokens.refresh_token })).body;
  t.is(roleOf((await refresh(aliceTokens)).access_token), "admin", "set by the command");
  t.is(roleOf((await refresh(bobTokens)).access_token), "authority", "given at start by Protection:Authorities");

  const seen: BusMessage[] = [];
  const sub = await second.bus!.subscribe(
    { stream: "PROTECTION", filterSubjects: ["protection.v1.account.role_changed"], startSeq: 1 },
    (m) => {
      seen.push(m);
    },
  );
  t.teardown(() => sub.stop());
  const changes = await until(() => {
    const mine = seen
      .map((m) => fromBinary(AccountRoleChangedSchema, m.data))
      .filter((e) => e.accountId === aliceId || e.accountId === bobId);
    return mine.length >= 2 && mine;
  }, "both role changes relayed");
  t.deepEqual(
    changes.map((e) => [e.accountId, e.previousRole, e.role]),
    [
      [aliceId, "user", "admin"],
      [bobId, "user", "authority"],
    ],
  );
});
