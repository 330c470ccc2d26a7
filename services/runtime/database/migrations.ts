// Collects the migrations of every hosted module into one ordered list and applies the pending ones at start.
import type { Migrator } from "@mikro-orm/migrations";
import type { MikroORM } from "@mikro-orm/postgresql";
import type { DatabaseModule, Logger, NamedMigration } from "./types.js";

export const MIGRATIONS_TABLE = "mikro_orm_migrations";

// Arbitrary but fixed: every Meshwork process contends for the same advisory lock while migrating.
const MIGRATION_LOCK_KEY = 0x6d65_7368_6d69_67n; // "meshmig"

/** Dedupes modules by name (the outbox module is included by every service) and checks migration names. */
export function collectModules(modules: DatabaseModule[]): DatabaseModule[] {
  const byName = new Map<string, DatabaseModule>();
  for (const module of modules) {
    const seen = byName.get(module.name);
    if (seen && seen !== module) throw new Error(`two different database modules are named "${module.name}"`);
    byName.set(module.name, module);
  }
  const migrationNames = new Set<string>();
  for (const module of byName.values()) {
    for (const migration of module.migrations) {
      // The prefix keeps modules apart in the shared table: a process hosting a subset of modules then
      // simply never looks at the rows of the others (umzug diffs its own list against the table).
      if (!migration.name.startsWith(`${module.name}-`)) {
        throw new Error(`migration "${migration.name}" of module "${module.name}" must be named "${module.name}-..."`);
      }
      if (migrationNames.has(migration.name)) throw new Error(`duplicate migration name "${migration.name}"`);
      migrationNames.add(migration.name);
    }
  }
  return [...byName.values()];
}

/** Module order first, then each module's own order: modules are independent, their steps are not. */
export function migrationList(modules: DatabaseModule[]): NamedMigration[] {
  return modules.flatMap((module) => module.migrations);
}

export async function applyMigrations(orm: MikroORM, opts: { serialize: boolean; logger: Logger }): Promise<string[]> {
  // openDatabase registers the Migrator extension, so the generic accessor is known to hold one.
  const migrator = orm.migrator as Migrator;
  const connection = orm.em.getConnection();
  let applied: { name: string }[];
  if (!opts.serialize) {
    applied = await migrator.up();
  } else {
    // Several processes may start at once against one server. A transaction-scoped advisory lock
    // serializes them; the migrations table is created under the lock in its own transaction first,
    // because the migrator checks for it on another pooled connection that must already see it.
    const storage = migrator.getStorage();
    await connection.transactional(async (trx) => {
      await connection.execute("select pg_advisory_xact_lock(?)", [MIGRATION_LOCK_KEY.toString()], "all", trx);
      storage.setMasterMigration(trx);
      try {
        await storage.ensureTable();
      } finally {
        storage.unsetMasterMigration();
      }
    });
    applied = await connection.transactional(async (trx) => {
      await connection.execute("select pg_advisory_xact_lock(?)", [MIGRATION_LOCK_KEY.toString()], "all", trx);
      return migrator.up({ transaction: trx });
    });
  }
  const names = applied.map((m) => m.name);
  if (names.length > 0) opts.logger.info({ migrations: names }, "applied database migrations");
  else opts.logger.debug("database schema is up to date");
  return names;
}
