// db.reads.byId must read exactly what em.findOne reads, and db.reads.statement run one prepared
// statement, on embedded PGlite and on real PostgreSQL.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EntitySchema } from "@mikro-orm/core";
import { Migration } from "@mikro-orm/migrations";
import test, { type ExecutionContext } from "ava";
import { openDatabase, type Database, type DatabaseModule } from "./index.js";
import { realInfra, realServers } from "../../../test/support/real-infra.js";
import { createTestDatabaseUrl } from "../../../test/support/test-database.js";
import { testLogger } from "../../../test/support/test-logger.js";

interface Gadget {
  id: string;
  name: string | null;
  weight: number | null;
  count: number;
  active: boolean;
  tags: string[] | null;
  extra: Record<string, unknown> | null;
  seenAt: Date | null;
  createdAt: Date;
}

const GadgetEntity = new EntitySchema<Gadget>({
  name: "ReadsGadget",
  tableName: "readstest_gadget",
  properties: {
    id: { type: "uuid", primary: true },
    name: { type: "text", nullable: true },
    weight: { type: "number", columnType: "double precision", nullable: true },
    count: { type: "integer" },
    active: { type: "boolean" },
    tags: { type: "string[]", columnType: "text[]", nullable: true },
    extra: { type: "json", columnType: "jsonb", nullable: true },
    seenAt: { type: "Date", columnType: "timestamptz", nullable: true },
    createdAt: { type: "Date", columnType: "timestamptz" },
  },
});

interface Ledger {
  id: string;
  amount: string;
}

// numeric comes back from pg as text and MikroORM may convert it: byId refuses rather than guess.
const LedgerEntity = new EntitySchema<Ledger>({
  name: "ReadsLedger",
  tableName: "readstest_ledger",
  properties: { id: { type: "uuid", primary: true }, amount: { type: "decimal", columnType: "numeric(12,2)" } },
});

class CreateTables extends Migration {
  override up(): void {
    this.addSql(
      'create table "readstest_gadget" ("id" uuid primary key, "name" text, "weight" double precision, "count" int not null, ' +
        '"active" boolean not null, "tags" text[], "extra" jsonb, "seen_at" timestamptz, "created_at" timestamptz not null);',
    );
    this.addSql('create table "readstest_ledger" ("id" uuid primary key, "amount" numeric(12,2) not null);');
  }
}

const module: DatabaseModule = {
  name: "readstest",
  entities: [GadgetEntity, LedgerEntity],
  migrations: [{ name: "readstest-0001-tables", class: CreateTables }],
};
const logger = testLogger("prepared-reads.test");
const infra = realInfra();

async function open(t: ExecutionContext, real: boolean): Promise<Database> {
  const dataDir = await mkdtemp(join(tmpdir(), "meshwork-reads-"));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  let url: string | undefined;
  if (real) {
    const created = await createTestDatabaseUrl(infra.databaseUrl!);
    t.teardown(() => created.drop());
    url = created.url;
  }
  const db = await openDatabase({ url, dataDir, modules: [module], logger });
  t.teardown(() => db.close());
  return db;
}

for (const real of realServers(test, "postgres", ["postgres"]) ? [false, true] : [false]) {
  const name = (title: string) => `${real ? "postgres" : "embedded"}: ${title}`;

  test(name("byId reads the same row as em.findOne, values and types included"), async (t) => {
    const db = await open(t, real);
    const full: Gadget = {
      id: "0b6f3c1e-5a2b-4c1d-9e8f-7a6b5c4d3e2f",
      name: 'Lamp, "desk"',
      weight: 1.25,
      count: 3,
      active: true,
      tags: ["a", "b c"],
      extra: { nested: { n: 1 }, list: [true, null] },
      seenAt: new Date("2026-11-21T10:11:12.345Z"),
      createdAt: new Date("2026-01-02T03:04:05.000Z"),
    };
    const empty: Gadget = {
      ...full,
      id: "1c7a4d2f-6b3c-4d2e-8f9a-8b7c6d5e4f30",
      name: null,
      weight: null,
      tags: null,
      extra: null,
      seenAt: null,
      active: false,
    };
    const em = db.em();
    em.create(GadgetEntity, full);
    em.create(GadgetEntity, empty);
    await em.flush();

    for (const row of [full, empty]) {
      const viaOrm = await db.em().findOneOrFail(GadgetEntity, { id: row.id });
      const viaReads = await db.reads.byId(GadgetEntity, row.id);
      t.deepEqual({ ...viaReads }, { ...viaOrm }, "the same properties and values as the ORM");
      t.deepEqual(viaReads, row);
    }
    t.true((await db.reads.byId(GadgetEntity, full.id))!.seenAt instanceof Date);
    const listed = await db.reads.where(GadgetEntity, "readstest_gadgets_by_count", `where "count" = $1 order by "name" nulls first`, [3]);
    t.deepEqual(
      listed.map((row) => ({ ...row })),
      (await db.em().find(GadgetEntity, { count: 3 }, { orderBy: { name: "asc nulls first" } })).map((row) => ({ ...row })),
      "where reads the rows the ORM's find reads, in the clause's order",
    );
    t.deepEqual(listed, [empty, full]);
  });

  test(name("byId answers null for a missing row and keeps working after many calls on few connections"), async (t) => {
    const db = await open(t, real);
    t.is(await db.reads.byId(GadgetEntity, "2d8b5e3a-7c4d-4e3f-9a0b-9c8d7e6f5a41"), null);
    const em = db.em();
    em.create(GadgetEntity, {
      id: "3e9c6f4b-8d5e-4f4a-8b1c-0d9e8f7a6b52",
      name: "x",
      weight: null,
      count: 0,
      active: true,
      tags: null,
      extra: null,
      seenAt: null,
      createdAt: new Date(),
    });
    await em.flush();
    // More concurrent reads than pool connections (one, embedded): each waits its turn, none fails.
    const found = await Promise.all(Array.from({ length: 50 }, () => db.reads.byId(GadgetEntity, "3e9c6f4b-8d5e-4f4a-8b1c-0d9e8f7a6b52")));
    t.true(found.every((row) => row?.name === "x"));
  });

  test(name("a column type byId cannot read as the ORM does is refused with the property named"), async (t) => {
    const db = await open(t, real);
    await t.throwsAsync(() => db.reads.byId(LedgerEntity, "4f0d7a5c-9e6f-4a5b-9c2d-1e0f9a8b7c63"), {
      message: /ReadsLedger\.amount: column type numeric\(12,2\)/,
    });
  });

  test(name("statement runs one prepared statement again and again, concurrently, with its own values"), async (t) => {
    const db = await open(t, real);
    const em = db.em();
    for (const [id, count] of [
      ["5a1e8b6d-0f7a-4b6c-8d3e-2f1a0b9c8d74", 1],
      ["6b2f9c7e-1a8b-4c7d-9e4f-3a2b1c0d9e85", 2],
    ] as const) {
      em.create(GadgetEntity, {
        id,
        name: null,
        weight: null,
        count,
        active: true,
        tags: null,
        extra: null,
        seenAt: null,
        createdAt: new Date(),
      });
    }
    await em.flush();
    const bump = (id: string, by: number) =>
      db.reads.statement<{ count: number }>(
        "readstest_bump",
        'update "readstest_gadget" set "count" = "count" + $2 where "id" = $1 returning "count"',
        [id, by],
      );
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        bump(i % 2 ? "5a1e8b6d-0f7a-4b6c-8d3e-2f1a0b9c8d74" : "6b2f9c7e-1a8b-4c7d-9e4f-3a2b1c0d9e85", 1),
      ),
    );
    t.deepEqual(await bump("5a1e8b6d-0f7a-4b6c-8d3e-2f1a0b9c8d74", 0), [{ count: 11 }]);
    t.deepEqual(await bump("6b2f9c7e-1a8b-4c7d-9e4f-3a2b1c0d9e85", 0), [{ count: 12 }]);
    t.deepEqual(await bump("7c3a0d8f-2b9c-4d8e-8f5a-4b3c2d1e0f96", 1), [], "no row, no answer");
    await t.throwsAsync(() => bump("not-a-uuid", 1), { message: /uuid/ });
    t.deepEqual(await bump("5a1e8b6d-0f7a-4b6c-8d3e-2f1a0b9c8d74", 0), [{ count: 11 }], "a failed statement leaves the lane usable");
  });

  test(name("byIdShared: concurrent reads share a statement and each gets byId's answer, a bad key failing alone"), async (t) => {
    const db = await open(t, real);
    const em = db.em();
    const ids = ["8d4b1e9a-3c0d-4e9f-9a6b-5c4d3e2f1a07", "9e5c2f0b-4d1e-4f0a-8b7c-6d5e4f3a2b18"];
    for (const [i, id] of ids.entries()) {
      em.create(GadgetEntity, {
        id,
        name: `g${i}`,
        weight: null,
        count: i,
        active: true,
        tags: null,
        extra: null,
        seenAt: new Date("2026-11-25T06:00:00.000Z"),
        createdAt: new Date(),
      });
    }
    await em.flush();
    const missing = "0f6d3a1c-5e2f-4a1b-9c8d-7e6f5a4b3c29";
    // Upper case: the same uuid to PostgreSQL, and the same answer.
    const asked = [ids[0]!, ids[1]!, missing, ids[0]!, ids[1]!.toUpperCase()];
    const shared = await Promise.all(asked.map((id) => db.reads.byIdShared(GadgetEntity, id)));
    const alone = await Promise.all(asked.map((id) => db.reads.byId(GadgetEntity, id)));
    t.deepEqual(shared, alone);
    t.deepEqual(
      shared.map((row) => row?.name ?? null),
      ["g0", "g1", null, "g0", "g1"],
    );
    t.true(shared[0]!.seenAt instanceof Date);
    const mixed = await Promise.allSettled([
      db.reads.byIdShared(GadgetEntity, ids[0]!),
      db.reads.byIdShared(GadgetEntity, "not-a-uuid"),
      db.reads.byIdShared(GadgetEntity, missing),
    ]);
    t.like(mixed[0], { status: "fulfilled", value: { name: "g0" } });
    t.is(mixed[1]!.status, "rejected", "the bad key fails");
    t.like(mixed[2], { status: "fulfilled", value: null });
    t.is((await db.reads.byIdShared(GadgetEntity, ids[1]!))?.name, "g1", "a lone read after a failed batch");
  });
}
