// Organization tokens below the REST front: the redemption other parts call (concurrent uses never
// exceed max_uses, a rollback gives its use back, revoked and unknown tokens are not found, one
// event per use without the token) and the seal that keeps tokens for their QR codes. On embedded
// PGlite and, when configured, real PostgreSQL.
import test from "ava";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { OrganizationTokenRedeemedSchema } from "../../gen/protection/v1/events_pb.js";
import { createTestDatabaseUrl } from "../../test/support/test-database.js";
import { realInfra } from "../../test/support/real-infra.js";
import { testLogger } from "../../test/support/test-logger.js";
import { ConfigError } from "../runtime/config/index.js";
import { type Database, openDatabase } from "../runtime/database/index.js";
import { createUnitOfWork, OutboxEvent, outboxModule } from "../runtime/outbox/index.js";
import { uuidv7 } from "./domain/ids.js";
import { protectionModule } from "./index.js";
import {
  hashOrganizationToken,
  loadTokenSealKey,
  newOrganizationToken,
  redeemOrganizationToken,
  tokenSealKey,
} from "./organization-tokens.js";
import { AccountEntity } from "./store/entities.js";
import { OrganizationTokenEntity } from "./store/organization-tokens.js";
import { OrganizationEntity } from "./store/relations.js";

const logger = testLogger("organization-tokens.test");
const infra = realInfra();
const targets = infra.databaseUrl ? ["embedded", "postgres"] : ["embedded"];

// One database per target for the whole file: opening one (every protection migration) is the
// slow part, and each test seeds its own organization and token.
const opened = new Map<string, Promise<{ db: Database; close(): Promise<void> }>>();

async function open(target: string) {
  const dataDir = await mkdtemp(join(tmpdir(), "meshwork-org-tokens-"));
  let drop: (() => Promise<void>) | undefined;
  let url: string | undefined;
  if (target === "postgres") {
    const created = await createTestDatabaseUrl(infra.databaseUrl!);
    drop = created.drop;
    url = created.url;
  }
  const db = await openDatabase({ url, dataDir, modules: [outboxModule, protectionModule.database], logger });
  return {
    db,
    async close() {
      await db.close();
      await drop?.();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

async function openAt(target: string): Promise<Database> {
  let found = opened.get(target);
  if (!found) opened.set(target, (found = open(target)));
  return (await found).db;
}

test.after.always(async () => {
  for (const found of opened.values()) await (await found).close();
});

/** An account, an organization and one token of it with `maxUses`; answers the token. */
async function seed(db: Database, maxUses: number) {
  const em = db.em();
  const now = new Date();
  const accountId = uuidv7();
  const organizationId = uuidv7();
  em.persist(
    em.create(AccountEntity, {
      id: accountId,
      email: `${accountId}@example.com`,
      displayName: "Owner",
      passwordHash: "x",
      role: "user",
      createdAt: now,
      updatedAt: now,
    }),
  );
  em.persist(em.create(OrganizationEntity, { id: organizationId, name: "Org", description: null, createdAt: now, updatedAt: now }));
  await em.flush();
  const token = newOrganizationToken();
  const tokenId = uuidv7();
  em.persist(
    em.create(OrganizationTokenEntity, {
      id: tokenId,
      organizationId,
      label: "Lab",
      tier: "partner",
      tokenHash: hashOrganizationToken(token),
      tokenSealed: tokenSealKey(Buffer.alloc(32, 7)).seal(tokenId, token),
      maxUses,
      uses: 0,
      createdBy: accountId,
      createdAt: now,
      revokedAt: null,
    }),
  );
  await em.flush();
  return { token, tokenId, organizationId, accountId };
}

const reasonOf = (err: unknown) => (err as ConnectError).findDetails(ErrorInfoSchema)[0]?.reason;

async function usesOf(db: Database, tokenId: string): Promise<number> {
  return (await db.em().fork().findOneOrFail(OrganizationTokenEntity, { id: tokenId })).uses;
}

for (const target of targets) {
  test(`${target}: of 12 concurrent redemptions of a token with max_uses 3, exactly 3 succeed`, async (t) => {
    const db = await openAt(target);
    const uow = createUnitOfWork({ db, outbox: { notify() {} } });
    const { token, tokenId, organizationId } = await seed(db, 3);
    const outcomes = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) => uow.run((tx) => redeemOrganizationToken(tx, token, { deviceId: `device-${i}` }))),
    );
    const won = outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
    const lost = outcomes.flatMap((o) => (o.status === "rejected" ? [o.reason] : []));
    t.is(won.length, 3);
    t.deepEqual(won.map((w) => w.uses).sort(), [1, 2, 3]);
    for (const w of won) t.like(w, { organizationId, tokenId, tier: "partner", maxUses: 3 });
    t.is(lost.length, 9);
    for (const err of lost) t.is(reasonOf(err), "TOKEN_EXHAUSTED");
    t.is(await usesOf(db, tokenId), 3);
    const recorded = (await db.em().fork().find(OutboxEvent, { subject: "protection.v1.organization.token_redeemed" })).filter(
      (row) => fromBinary(OrganizationTokenRedeemedSchema, row.payload).tokenId === tokenId,
    );
    t.is(recorded.length, 3, "one event per counted use");
    const event = fromBinary(OrganizationTokenRedeemedSchema, recorded[0]!.payload);
    t.like(event, { organizationId, tokenId, maxUses: 3 });
    t.regex(event.deviceId, /^device-\d+$/);
    for (const row of recorded) t.false(Buffer.from(row.payload).toString("latin1").includes(token.slice(4)), "no token in the event");
  });

  test(`${target}: a redemption rolled back gives its use back; revoked, unknown and malformed tokens are not found`, async (t) => {
    const db = await openAt(target);
    const uow = createUnitOfWork({ db, outbox: { notify() {} } });
    const { token, tokenId } = await seed(db, 1);
    const failed = await t.throwsAsync(
      uow.run(async (tx) => {
        await redeemOrganizationToken(tx, token);
        throw new Error("the registration failed after the redemption");
      }),
    );
    t.regex(failed.message, /registration failed/);
    t.is(await usesOf(db, tokenId), 0, "the use came back");
    const first = await uow.run((tx) => redeemOrganizationToken(tx, token));
    t.is(first.uses, 1);
    t.is(reasonOf(await t.throwsAsync(uow.run((tx) => redeemOrganizationToken(tx, token)))), "TOKEN_EXHAUSTED");

    const other = await seed(db, 5);
    await db.em().fork().nativeUpdate(OrganizationTokenEntity, { id: other.tokenId }, { revokedAt: new Date() });
    for (const candidate of [other.token, newOrganizationToken(), "otk_short", "enr_whatever", ""]) {
      t.is(reasonOf(await t.throwsAsync(uow.run((tx) => redeemOrganizationToken(tx, candidate)))), "TOKEN_NOT_FOUND", candidate);
    }
    t.is(await usesOf(db, other.tokenId), 0);
  });

  test(`${target}: the generated seal key is made once and shared by every load`, async (t) => {
    const db = await openAt(target);
    const [a, b] = await Promise.all([loadTokenSealKey(undefined, db.em().fork()), loadTokenSealKey(undefined, db.em().fork())]);
    const c = await loadTokenSealKey(undefined, db.em().fork());
    const id = uuidv7();
    const token = newOrganizationToken();
    t.is(b.open(id, a.seal(id, token)), token);
    t.is(c.open(id, a.seal(id, token)), token);
  });
}

test("a sealed token opens only under its key and its own id, and unaltered", (t) => {
  const key = tokenSealKey(Buffer.alloc(32, 1));
  const id = uuidv7();
  const token = newOrganizationToken();
  t.regex(token, /^otk_[A-Za-z0-9_-]{43}$/);
  const sealed = key.seal(id, token);
  t.false(sealed.toString("latin1").includes(token), "the token is not in the clear");
  t.notDeepEqual(key.seal(id, token), sealed, "a fresh nonce each time");
  t.is(key.open(id, sealed), token);
  t.is(key.open(uuidv7(), sealed), undefined, "another row's id");
  t.is(tokenSealKey(Buffer.alloc(32, 2)).open(id, sealed), undefined, "another key");
  const altered = Buffer.from(sealed);
  altered[20]! ^= 1;
  t.is(key.open(id, altered), undefined, "altered");
  t.is(key.open(id, Buffer.alloc(10)), undefined, "too short");
});

test("Protection:Organizations:TokenKeyFile: a secret of at least 32 bytes; a short or missing file is a configuration error", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "meshwork-token-key-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const good = join(dir, "good.key");
  await writeFile(good, `${Buffer.alloc(32, 9).toString("base64")}\n`);
  const short = join(dir, "short.key");
  await writeFile(short, "too short\n");
  // A file key never touches the database: no entity manager is needed.
  const noDb = undefined as never;
  const [a, b] = [await loadTokenSealKey(good, noDb), await loadTokenSealKey(good, noDb)];
  const id = uuidv7();
  t.is(b.open(id, a.seal(id, "otk_x")), "otk_x", "the same file gives the same key");
  await t.throwsAsync(loadTokenSealKey(short, noDb), { instanceOf: ConfigError, message: /at least 32 bytes/ });
  await t.throwsAsync(loadTokenSealKey(join(dir, "missing.key"), noDb), { instanceOf: ConfigError, message: /cannot read/ });
});
