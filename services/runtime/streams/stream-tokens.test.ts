// Stream tokens in a module's own table: only the digest is stored, a token is valid on any
// instance sharing the database until it expires, and anything not shaped like one is refused.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { openDatabase, type DatabaseModule } from "../database/index.js";
import { createTestDatabaseUrl } from "../../../test/support/test-database.js";
import { realInfra } from "../../../test/support/real-infra.js";
import { testLogger } from "../../../test/support/test-logger.js";
import { createStreamTokens, hashStreamToken, streamTokenTable } from "./index.js";

const logger = testLogger("stream-tokens.test");
const infra = realInfra();
const table = streamTokenTable("tokentest_stream_token");
const tokens: DatabaseModule = {
  name: "tokentest",
  entities: [table.entity],
  migrations: [{ name: "tokentest-0001-stream-tokens", class: table.migrations[0]! }],
};

test("issued tokens are stored as digests, valid everywhere until they expire", async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), "meshwork-stream-tokens-"));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  let url: string | undefined;
  if (infra.databaseUrl) {
    const created = await createTestDatabaseUrl(infra.databaseUrl);
    t.teardown(() => created.drop());
    url = created.url;
  }
  const db = await openDatabase({ url, dataDir, modules: [tokens], logger });
  t.teardown(() => db.close());

  let now = new Date("2030-01-01T00:00:00.000Z");
  const issuer = createStreamTokens({ db, table, ttlMinutes: 10, now: () => now });
  // Another instance: it shares nothing with the issuer but the database.
  const other = createStreamTokens({ db, table, ttlMinutes: 10, now: () => now });
  const { token, expiresAt } = await issuer.issue();
  t.regex(token, /^[A-Za-z0-9_-]{43}$/);
  t.is(expiresAt.toISOString(), "2030-01-01T00:10:00.000Z");

  const rows = await db.em().execute<{ token_hash: string }[]>(`select "token_hash" from "tokentest_stream_token"`);
  t.deepEqual(
    rows.map((r) => r.token_hash),
    [hashStreamToken(token)],
  );
  t.true(await other.isValid(token));
  t.false(await other.isValid(`${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`), "an unknown token");
  t.false(await other.isValid("not a token"));

  now = new Date(expiresAt.getTime() - 1);
  t.true(await other.isValid(token), "still valid just before it expires");
  now = expiresAt;
  t.false(await other.isValid(token), "expired");
});
