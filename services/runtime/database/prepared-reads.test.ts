// db.reads.byId must read exactly what em.findOne reads, on embedded PGlite and on real PostgreSQL.
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
}
