// For tests of the database-backed tool families (memory, tasks): the agents' tool tables in a
// fresh database, embedded PGlite by default or a throwaway database on the real server when
// DATABASE_URL is set, and a ToolContext whose `services.em` forks it. Not imported by production code.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { realInfra } from "../../../test/support/real-infra.js";
import { createTestDatabaseUrl } from "../../../test/support/test-database.js";
import { testLogger } from "../../../test/support/test-logger.js";
import { type Database, openDatabase } from "../../runtime/database/index.js";
import { memoryTasksParts } from "./memory/module-parts.js";
import { type TestToolContext, testToolContext } from "./testing.js";

export interface ToolDatabase {
  db: Database;
  context(options?: { agentId?: string }): Promise<TestToolContext>;
  close(): Promise<void>;
}

export async function openToolDatabase(name: string): Promise<ToolDatabase> {
  const dataDir = await mkdtemp(join(tmpdir(), `tools-db-${name}-`));
  const infra = realInfra();
  const created = infra.databaseUrl ? await createTestDatabaseUrl(infra.databaseUrl) : undefined;
  const db = await openDatabase({
    url: created?.url,
    dataDir,
    modules: [{ name: "agents", ...memoryTasksParts }],
    logger: testLogger(`${name}.test`),
  });
  return {
    db,
    async context(options = {}) {
      const ctx = await testToolContext({ agentId: options.agentId });
      ctx.services.em = () => db.em();
      return ctx;
    },
    async close() {
      await db.close();
      await created?.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
