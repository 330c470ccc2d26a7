// What seeding needs of the database beyond the entities: a lock every instance honours, and how
// many seeded rows exist.
import type { EntityManager } from "@mikro-orm/postgresql";

/**
 * Serialises seeding across every instance sharing the database: a transaction-scoped advisory
 * lock, released by commit or rollback. The number is arbitrary but fixed: "MWSEED" in ASCII.
 */
const seedLockKey = 0x4d5753454544;

/** Takes the seeding lock for the rest of `em`'s transaction (waits for another seeder). */
export async function lockSeeding(em: EntityManager): Promise<void> {
  await em.execute(`select pg_advisory_xact_lock(${seedLockKey})`);
}

/** Seeded assets, devices and geofences, together. */
export async function countSeeded(em: EntityManager): Promise<number> {
  const [row] = await em.execute<{ seeded: string | number }[]>(
    `select (select count(*) from "tracking_asset" where "is_seeded")
          + (select count(*) from "tracking_device" where "is_seeded")
          + (select count(*) from "tracking_geofence" where "is_seeded") as "seeded"`,
  );
  return Number(row?.seeded ?? 0);
}
