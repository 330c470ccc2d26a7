// Opens, migrates, writes and reopens databases in embedded mode and, when configured, on real PostgreSQL.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EntitySchema, LockMode, type Opt } from "@mikro-orm/core";
import { Migration } from "@mikro-orm/migrations";
import test, { type ExecutionContext } from "ava";
import { findPage, MIGRATIONS_TABLE, openDatabase, redactUrl, type DatabaseModule } from "./index.js";
import { realInfra, realServers } from "../../../test/support/real-infra.js";
import { createTestDatabaseUrl } from "../../../test/support/test-database.js";
import { testLogger } from "../../../test/support/test-logger.js";

interface Note {
  id: number;
  body: string;
  createdAt: Opt<Date>;
}

const NoteEntity = new EntitySchema<Note>({
  name: "Note",
  tableName: "dbtest_note",
  properties: {
    id: { type: "integer", primary: true },
    body: { type: "text" },
    createdAt: { type: "datetime", columnType: "timestamptz", onCreate: () => new Date() },
  },
});

class CreateNote extends Migration {
  override up(): void {
    this.addSql('create table "dbtest_note" ("id" int primary key, "body" text not null, "created_at" timestamptz not null);');
  }
}

interface Counter {
  name: string;
  value: number;
}

const CounterEntity = new EntitySchema<Counter>({
  name: "Counter",
  tableName: "dbtest_counter",
  properties: { name: { type: "text", primary: true }, value: { type: "integer" } },
});

class CreateCounter extends Migration {
  override up(): void {
    this.addSql('create table "dbtest_counter" ("name" text primary key, "value" int not null);');
  }
}

const notes: DatabaseModule = { name: "notes", entities: [NoteEntity], migrations: [{ name: "notes-0001-note", class: CreateNote }] };
const counters: DatabaseModule = {
  name: "counters",
  entities: [CounterEntity],
  migrations: [{ name: "counters-0001-counter", class: CreateCounter }],
};

const logger = testLogger("database.test");
const infra = realInfra();

interface Target {
  name: string;
  /** Where a "process" opens its database; the same place twice means a restart. */
  place(t: ExecutionContext): Promise<{ url?: string; dataDir: string }>;
}

const embedded: Target = {
  name: "embedded",
  async place(t) {
    const dataDir = await mkdtemp(join(tmpdir(), "meshwork-db-"));
    t.teardown(() => rm(dataDir, { recursive: true, force: true }));
    return { dataDir };
  },
};

const postgres: Target = {
  name: "postgres",
  async place(t) {
    const created = await createTestDatabaseUrl(infra.databaseUrl!);
    t.teardown(() => created.drop());
    const dataDir = await mkdtemp(join(tmpdir(), "meshwork-db-"));
    t.teardown(() => rm(dataDir, { recursive: true, force: true }));
    return { url: created.url, dataDir };
  },
};

const targets = realServers(test, "postgres", ["postgres"]) ? [embedded, postgres] : [embedded];

for (const target of targets) {
  test(`${target.name}: migrates, writes, and still sees the data after a restart`, async (t) => {
    const place = await target.place(t);
    const first = await openDatabase({ ...place, modules: [notes], logger });
    t.is(first.mode, target.name as "embedded" | "postgres");
    t.deepEqual(await first.health(), { ok: true });
    const em = first.em();
    em.create(NoteEntity, { id: 1, body: "kept" });
    await em.flush();
    await first.close();
    t.like(await first.health(), { ok: false });

    const second = await openDatabase({ ...place, modules: [notes], logger });
    t.teardown(() => second.close());
    const found = await second.em().findOneOrFail(NoteEntity, 1);
    t.is(found.body, "kept");
    t.true(found.createdAt instanceof Date);
    const applied = await second.em().getConnection().execute(`select name from "${MIGRATIONS_TABLE}" order by id`);
    t.deepEqual(
      applied.map((r) => (r as { name: string }).name),
      ["notes-0001-note"],
      "a restart applies nothing twice",
    );
  });

  test(`${target.name}: a process hosting fewer modules ignores the others' rows in the shared migrations table`, async (t) => {
    const place = await target.place(t);
    const both = await openDatabase({ ...place, modules: [notes, counters], logger });
    await both.close();

    const onlyCounters = await openDatabase({ ...place, modules: [counters], logger });
    const em = onlyCounters.em();
    em.create(CounterEntity, { name: "a", value: 1 });
    await em.flush();
    await onlyCounters.close();

    const again = await openDatabase({ ...place, modules: [counters, notes, counters], logger });
    t.teardown(() => again.close());
    const rows = await again.em().getConnection().execute(`select name from "${MIGRATIONS_TABLE}" order by id`);
    t.deepEqual(
      rows.map((r) => (r as { name: string }).name),
      ["notes-0001-note", "counters-0001-counter"],
    );
    t.is((await again.em().findOneOrFail(CounterEntity, { name: "a" })).value, 1);
  });

  test(`${target.name}: findPage's page and total agree while rows keep arriving`, async (t) => {
    const place = await target.place(t);
    const db = await openDatabase({ ...place, modules: [notes], logger });
    t.teardown(() => db.close());
    let writing = true;
    let next = 0;
    const writer = (async () => {
      while (writing && next < 2_000) await db.em().insert(NoteEntity, { id: ++next, body: "arriving", createdAt: new Date() });
    })();
    const disagreements: string[] = [];
    try {
      for (let i = 0; i < 200; i++) {
        // The writer commits ids 1, 2, 3, ... one at a time, so in any one snapshot the newest id
        // is the count: a page of one row read apart from its total shows a different number.
        const page = await findPage(db.em(), NoteEntity, {}, { limit: 1, orderBy: { id: "desc" } });
        const newest = page.rows[0]?.id ?? 0;
        if (newest !== page.total) disagreements.push(`newest ${newest} of ${page.total}`);
      }
    } finally {
      writing = false;
      await writer;
    }
    t.true(next > 0, "rows arrived while the pages were read");
    t.deepEqual(disagreements, []);
  });

  test(`${target.name}: concurrent transactions all commit, a failing one rolls back`, async (t) => {
    const place = await target.place(t);
    const db = await openDatabase({ ...place, modules: [counters], logger });
    t.teardown(() => db.close());
    const seed = db.em();
    seed.create(CounterEntity, { name: "hits", value: 0 });
    await seed.flush();

    // Row locks make the read-modify-write safe on a real server; embedded mode serializes anyway.
    const increments = Array.from({ length: 12 }, () =>
      db.em().transactional(async (em) => {
        const counter = await em.findOneOrFail(CounterEntity, { name: "hits" }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        counter.value += 1;
      }),
    );
    const failing = db.em().transactional(async (em) => {
      const counter = await em.findOneOrFail(CounterEntity, { name: "hits" }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      counter.value += 1000;
      await em.flush();
      throw new Error("abort");
    });
    await Promise.all(increments);
    await t.throwsAsync(failing, { message: "abort" });
    t.is((await db.em().findOneOrFail(CounterEntity, { name: "hits" })).value, 12);
  });
}

test("embedded: a second process cannot open a data directory that is in use", async (t) => {
  const place = await embedded.place(t);
  const db = await openDatabase({ ...place, modules: [notes], logger });
  t.teardown(() => db.close());
  await t.throwsAsync(openDatabase({ ...place, modules: [notes], logger }), { message: /another process/ });
  t.deepEqual(await db.health(), { ok: true });
});

test("migration names must carry their module prefix", async (t) => {
  const place = await embedded.place(t);
  const bad: DatabaseModule = { name: "bad", entities: [], migrations: [{ name: "0001-x", class: CreateNote }] };
  await t.throwsAsync(openDatabase({ ...place, modules: [bad], logger }), { message: /must be named "bad-/ });
});

test("a password in the URL never reaches an error message or the redacted form", async (t) => {
  t.is(redactUrl("postgres://app:s3cr3t@db.internal:5432/meshwork"), "postgres://app:***@db.internal:5432/meshwork");
  const dataDir = await mkdtemp(join(tmpdir(), "meshwork-db-"));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const error = await t.throwsAsync(openDatabase({ url: "postgres://app:s3cr3t@127.0.0.1:1/meshwork", dataDir, modules: [notes], logger }));
  t.false(error!.message.includes("s3cr3t"));
});

if (infra.databaseUrl) {
  test("postgres: processes starting together migrate once, serialized by the advisory lock", async (t) => {
    const place = await postgres.place(t);
    const dbs = await Promise.all([1, 2, 3].map(() => openDatabase({ ...place, modules: [notes, counters], logger })));
    t.teardown(() => Promise.all(dbs.map((db) => db.close())));
    const rows = await dbs[0]!.em().getConnection().execute(`select name from "${MIGRATIONS_TABLE}" order by id`);
    t.deepEqual(
      rows.map((r) => (r as { name: string }).name),
      ["notes-0001-note", "counters-0001-counter"],
    );
  });
}
