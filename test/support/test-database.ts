// Gives each test file its own database on a shared real server, so suites can run in parallel.
import { randomBytes } from "node:crypto";

export interface TestDatabase {
  url: string;
  /** Drops the database, disconnecting anything still attached to it. */
  drop(): Promise<void>;
}

export async function createTestDatabaseUrl(baseUrl: string): Promise<TestDatabase> {
  const name = `meshwork_test_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
  await adminQuery(baseUrl, `create database "${name}"`);
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  let dropped: Promise<void> | undefined;
  return {
    url: url.toString(),
    drop() {
      // WITH (FORCE) (PostgreSQL 13+) so a pool that was not closed cleanly cannot keep the database alive.
      dropped ??= adminQuery(baseUrl, `drop database if exists "${name}" with (force)`);
      return dropped;
    },
  };
}

async function adminQuery(baseUrl: string, sql: string): Promise<void> {
  // Loaded on demand: only tests call this, and `pg` arrives with @mikro-orm/postgresql anyway.
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: baseUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
