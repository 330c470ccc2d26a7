// The database tool policy store: an agent's policy and a session's state, read one at a time or
// both in one statement (agentAndSession, what every call of an agent in a session reads): both
// ways answer the same, with and without rows.
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { realInfra } from "../../../../test/support/real-infra.js";
import { createTestDatabaseUrl } from "../../../../test/support/test-database.js";
import { testLogger } from "../../../../test/support/test-logger.js";
import { type Database, openDatabase } from "../../../runtime/database/index.js";
import { toolsParts } from "../module-parts.js";
import { dbPolicyStore } from "./policy-store.js";

let db: Database;
let cleanup: () => Promise<void>;

test.before(async () => {
  const dataDir = await mkdtemp(join(tmpdir(), "tools-db-policy-"));
  const infra = realInfra();
  const created = infra.databaseUrl ? await createTestDatabaseUrl(infra.databaseUrl) : undefined;
  db = await openDatabase({
    url: created?.url,
    dataDir,
    modules: [{ name: "agents", entities: toolsParts.entities, migrations: toolsParts.migrations }],
    logger: testLogger("policy-store.test"),
  });
  cleanup = async () => {
    await db.close();
    await created?.drop();
    await rm(dataDir, { recursive: true, force: true });
  };
});
test.after.always(() => cleanup?.());

test("agentAndSession answers what agent() and session() answer, with and without rows", async (t) => {
  const store = dbPolicyStore(() => db.em(), db.reads);
  const unprepared = dbPolicyStore(() => db.em());
  t.is(unprepared.agentAndSession, undefined, "one statement only with prepared reads");
  const agent = randomUUID();
  const session = `s-${randomUUID()}`;
  const both = async () => {
    const together = await store.agentAndSession!(agent, session);
    const apart = { policy: await store.agent(agent), session: await store.session(session) };
    t.deepEqual(together, apart);
    return together;
  };

  t.deepEqual(await both(), { policy: undefined, session: { autorun: false, permissionsOff: false, approved: new Set() } });
  await store.setAgent(agent, { approvalMode: "auto", allow: ["read_*"], deny: ["exec"] });
  t.deepEqual((await both()).policy, { approvalMode: "auto", allow: ["read_*"], deny: ["exec"] });
  await store.setSession(session, { autorun: true });
  await store.remember(session, "write_file");
  await store.remember(session, "write_file");
  t.deepEqual((await both()).session, { autorun: true, permissionsOff: false, approved: new Set(["write_file"]) });
  await store.setAgent(agent, { allow: [], deny: [] });
  t.deepEqual((await both()).policy, { allow: [], deny: [] }, "no approval mode: the default applies");
  const other = await store.agentAndSession!(randomUUID(), session);
  t.is(other.policy, undefined);
  t.true(other.session.autorun, "a session without the agent's policy row");
});
