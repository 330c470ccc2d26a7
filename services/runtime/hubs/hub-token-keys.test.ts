// Hub token keys in a module's own table: created once, shared by every instance on the database,
// so a token one instance issued is admitted by another.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { createTestDatabaseUrl } from "../../../test/support/test-database.js";
import { realInfra } from "../../../test/support/real-infra.js";
import { testLogger } from "../../../test/support/test-logger.js";
import { type DatabaseModule, openDatabase } from "../database/index.js";
import { createHubConnectionTokens, hubTokenKeys, hubTokenKeyTable } from "./index.js";

const logger = testLogger("hub-token-keys.test");
const infra = realInfra();
const table = hubTokenKeyTable("keytest_hub_token_key");
const keysModule: DatabaseModule = {
  name: "keytest",
  entities: [table.entity],
  migrations: [{ name: "keytest-0001-hub-token-keys", class: table.migrations[0]! }],
};

test("one key is created for the database and every instance signs and admits with it", async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), "meshwork-hub-keys-"));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  let url: string | undefined;
  if (infra.databaseUrl) {
    const created = await createTestDatabaseUrl(infra.databaseUrl);
    t.teardown(() => created.drop());
    url = created.url;
  }
  const db = await openDatabase({ url, dataDir, modules: [keysModule], logger });
  t.teardown(() => db.close());

  // Two instances asking at once: one key between them.
  const a = hubTokenKeys({ db, table });
  const b = hubTokenKeys({ db, table });
  const [keysA, keysB] = await Promise.all([a(), b()]);
  t.is(keysA.length, 1);
  t.is(keysA[0]!.length, 32);
  t.deepEqual(Buffer.from(keysB[0]!), Buffer.from(keysA[0]!));
  const rows = await db.em().execute<{ key_id: string }[]>(`select "key_id" from "keytest_hub_token_key"`);
  t.is(rows.length, 1);

  const issuer = createHubConnectionTokens({ keys: a });
  const admitter = createHubConnectionTokens({ keys: hubTokenKeys({ db, table }) });
  const issued = await issuer.connect({ hub: "/hubs/x", connectionToken: "" });
  t.is((await admitter.connect({ hub: "/hubs/x", connectionToken: issued.connectionToken })).connectionId, issued.connectionId);
  t.throws(() => hubTokenKeyTable("Bad-Name"));
});
