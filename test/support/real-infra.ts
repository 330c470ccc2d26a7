// Decides whether a suite runs on embedded defaults or on real infrastructure, from the environment CI sets.
import type { TestFn } from "ava";

export interface RealInfra {
  /** A server URL to create throwaway databases on (see createTestDatabaseUrl), not a database to use. */
  databaseUrl?: string;
  natsUrl?: string;
}

export type RealServer = "postgres" | "nats";

const LOCAL_POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres";
const LOCAL_NATS = "nats://127.0.0.1:4222";

const SERVERS: Record<RealServer, { label: string; variable: string; key: keyof RealInfra }> = {
  postgres: { label: "PostgreSQL", variable: "DATABASE_URL", key: "databaseUrl" },
  nats: { label: "NATS", variable: "NATS_URL", key: "natsUrl" },
};

/**
 * DATABASE_URL / NATS_URL select real servers; MESHWORK_TEST_REAL=1 picks the local defaults for whichever
 * is unset. Without either, suites stay embedded so a fresh checkout needs no running services.
 */
export function realInfra(env: NodeJS.ProcessEnv = process.env): RealInfra {
  const local = isTruthy(env.MESHWORK_TEST_REAL);
  const databaseUrl = env.DATABASE_URL || (local ? LOCAL_POSTGRES : undefined);
  const natsUrl = env.NATS_URL || (local ? LOCAL_NATS : undefined);
  return { ...(databaseUrl ? { databaseUrl } : {}), ...(natsUrl ? { natsUrl } : {}) };
}

/**
 * MESHWORK_REQUIRE_REAL_INFRA=1 (CI's real-infrastructure pass): a run that was meant to exercise real
 * servers must not quietly fall back to the embedded ones and still report green.
 */
export function realInfraRequired(env: NodeJS.ProcessEnv = process.env): boolean {
  return isTruthy(env.MESHWORK_REQUIRE_REAL_INFRA);
}

/** The servers of `servers` that are not configured, as "PostgreSQL (DATABASE_URL)" for messages. */
export function missingServers(servers: readonly RealServer[], env: NodeJS.ProcessEnv = process.env): string[] {
  const infra = realInfra(env);
  return servers.filter((s) => !infra[SERVERS[s].key]).map((s) => `${SERVERS[s].label} (${SERVERS[s].variable})`);
}

/**
 * For tests that exist only on real servers: the configured URLs when every server in `servers` is
 * set, so the caller registers its tests. Otherwise undefined, and the tests are not registered on the
 * embedded defaults; but when real infrastructure is required, a test naming the missing server is
 * registered in their place and fails, so the run cannot pass with those tests silently absent.
 */
export function realServers(
  test: TestFn,
  what: string,
  servers: readonly RealServer[],
  env: NodeJS.ProcessEnv = process.env,
): RealInfra | undefined {
  const missing = missingServers(servers, env);
  if (missing.length === 0) return realInfra(env);
  if (realInfraRequired(env)) {
    test(`${what}: needs ${missing.join(" and ")}`, (t) => {
      t.fail(`MESHWORK_REQUIRE_REAL_INFRA is set but ${notConfigured(missing)}`);
    });
  }
  return undefined;
}

/** "PostgreSQL (DATABASE_URL) and NATS (NATS_URL) are not configured", for failure messages. */
export function notConfigured(missing: readonly string[]): string {
  return `${missing.join(" and ")} ${missing.length > 1 ? "are" : "is"} not configured`;
}

function isTruthy(value: string | undefined): boolean {
  return value !== undefined && value !== "" && value !== "0" && value.toLowerCase() !== "false";
}
