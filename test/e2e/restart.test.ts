// Data survives a restart: the embedded PostgreSQL keeps its data directory; on real
// PostgreSQL the same database is reopened. Migrations run again and find nothing to do.
import test from "ava";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabaseUrl } from "../support/test-database.js";
import { realInfra } from "../support/real-infra.js";
import { startTestMesh } from "../support/start-mesh.js";

test("an asset created before a restart is there after it", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "meshwork-restart-"));
  const infra = realInfra();
  const db = infra.databaseUrl ? await createTestDatabaseUrl(infra.databaseUrl) : undefined;
  t.teardown(async () => {
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const first = await startTestMesh({ dataDir, databaseUrl: db?.url });
  const res = await fetch(`${first.frontUrl("tracking")}/api/assets`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "persistent" }),
  });
  const { id } = (await res.json()) as { id: string };
  await first.close();

  const second = await startTestMesh({ dataDir, databaseUrl: db?.url });
  t.teardown(() => second.close());
  const got = await fetch(`${second.frontUrl("tracking")}/api/assets/${id}`);
  t.is(got.status, 200);
  t.like(await got.json(), { id, name: "persistent" });
});
