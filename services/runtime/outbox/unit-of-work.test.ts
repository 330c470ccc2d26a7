// The unit of work: the change and its events commit together and the relay is woken once after
// the commit; a rollback leaves no event and wakes nothing.
import { EntitySchema } from "@mikro-orm/core";
import { Migration } from "@mikro-orm/migrations";
import test, { type ExecutionContext } from "ava";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Database } from "../database/index.js";
import { createTestDatabaseUrl } from "../../../test/support/test-database.js";
import { realInfra } from "../../../test/support/real-infra.js";
import { testLogger } from "../../../test/support/test-logger.js";
import { widgetEvents } from "../../../test/support/test-events.js";
import { createUnitOfWork, OutboxEvent, outboxModule } from "./index.js";

const GadgetEntity = new EntitySchema<{ id: string; name: string }>({
  name: "Gadget",
  tableName: "uowtest_gadget",
  properties: { id: { type: "uuid", primary: true }, name: { type: "text" } },
});

class CreateGadget extends Migration {
  override up(): void {
    this.addSql('create table "uowtest_gadget" ("id" uuid primary key, "name" text not null);');
  }
}

const logger = testLogger("unit-of-work.test");
const infra = realInfra();
const targets = infra.databaseUrl ? ["embedded", "postgres"] : ["embedded"];
const events = widgetEvents("uowtest");

async function openAt(t: ExecutionContext, target: string): Promise<Database> {
  const dataDir = await mkdtemp(join(tmpdir(), "meshwork-uow-"));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  let url: string | undefined;
  if (target === "postgres") {
    const created = await createTestDatabaseUrl(infra.databaseUrl!);
    t.teardown(() => created.drop());
    url = created.url;
  }
  const db = await openDatabase({
    url,
    dataDir,
    modules: [outboxModule, { name: "gadgets", entities: [GadgetEntity], migrations: [{ name: "gadgets-0001", class: CreateGadget }] }],
    logger,
  });
  t.teardown(() => db.close());
  return db;
}

/** A relay that counts its wake-ups and what it would find in the outbox at the last one. */
function relayWatch(db: Database) {
  const relay = {
    wakes: 0,
    // What a relay woken now would find: the rows must already be committed.
    visibleAtWake: undefined as Promise<number> | undefined,
    notify() {
      relay.wakes++;
      relay.visibleAtWake = db.em().count(OutboxEvent);
    },
  };
  return relay;
}

for (const target of targets) {
  test(`${target}: a commit writes the change and its events, then wakes the relay once`, async (t) => {
    const db = await openAt(t, target);
    const relay = relayWatch(db);
    const uow = createUnitOfWork({ db, outbox: relay });
    const ids = await uow.run(async (tx) => {
      tx.em.create(GadgetEntity, { id: crypto.randomUUID(), name: "g1" });
      const first = tx.record(events.created, { value: "g1" });
      const second = tx.record(events.updated, { value: "g1 renamed" });
      t.is(relay.wakes, 0, "nothing is woken before the commit");
      return [first, second];
    });
    t.is(relay.wakes, 1);
    const rows = await db.em().find(OutboxEvent, {}, { orderBy: { createdAt: "asc" } });
    t.deepEqual(rows.map((r) => r.id).sort(), [...ids].sort());
    t.deepEqual(rows.map((r) => r.subject).sort(), ["uowtest.v1.widget.created", "uowtest.v1.widget.updated"]);
    t.is(await db.em().count(GadgetEntity), 1);
    t.is(await relay.visibleAtWake, 2, "the relay is woken after the rows are committed");
  });

  test(`${target}: statement writes a change and its events in one statement, then wakes the relay once`, async (t) => {
    const db = await openAt(t, target);
    const relay = relayWatch(db);
    const uow = createUnitOfWork({ db, outbox: relay });
    const id = crypto.randomUUID();
    await uow.statement((tx) => {
      const [insert] = tx.outboxInserts([{ schema: events.created, message: { value: "g2" } }]);
      return {
        sql: `with w0 as (insert into "uowtest_gadget" ("id", "name") values (?, ?)), w1 as (${insert!.sql}) select 1`,
        bindings: [id, "g2", ...insert!.bindings],
      };
    });
    t.is(relay.wakes, 1);
    t.like(await db.em().findOneOrFail(GadgetEntity, { id }), { name: "g2" });
    t.deepEqual(
      (await db.em().find(OutboxEvent, {})).map((r) => r.subject),
      ["uowtest.v1.widget.created"],
    );
    t.is(await relay.visibleAtWake, 1, "the relay is woken after the statement");
    // A statement that records no event has nothing for the relay; a failing one wakes nothing either.
    await uow.statement(() => ({
      sql: `insert into "uowtest_gadget" ("id", "name") values (?, ?)`,
      bindings: [crypto.randomUUID(), "quiet"],
    }));
    await t.throwsAsync(
      uow.statement((tx) => {
        const [insert] = tx.outboxInserts([{ schema: events.created, message: { value: "lost" } }]);
        return {
          sql: `with w0 as (insert into "uowtest_gadget" ("id", "name") values (?, ?)), w1 as (${insert!.sql}) select 1`,
          bindings: [id, "dup", ...insert!.bindings],
        };
      }),
    );
    t.is(relay.wakes, 1);
    t.is(await db.em().count(OutboxEvent), 1, "the failed statement wrote no event");
  });

  test(`${target}: a rollback leaves neither the change nor an event, and wakes nothing`, async (t) => {
    const db = await openAt(t, target);
    let wakes = 0;
    const uow = createUnitOfWork({ db, outbox: { notify: () => void wakes++ } });
    await t.throwsAsync(
      uow.run(async (tx) => {
        tx.em.create(GadgetEntity, { id: crypto.randomUUID(), name: "lost" });
        tx.record(events.created, { value: "lost" });
        await tx.em.flush();
        throw new Error("domain rule broken");
      }),
      { message: "domain rule broken" },
    );
    t.is(wakes, 0);
    t.is(await db.em().count(OutboxEvent), 0);
    t.is(await db.em().count(GadgetEntity), 0);

    // A change that records no event has nothing for the relay.
    await uow.run(async (tx) => {
      tx.em.create(GadgetEntity, { id: crypto.randomUUID(), name: "quiet" });
    });
    t.is(wakes, 0);
    t.is(await db.em().count(GadgetEntity), 1);
  });
}
