// Decides whether a suite runs on embedded defaults or on real infrastructure, from the environment CI sets.

export interface RealInfra {
  /** A server URL to create throwaway databases on (see createTestDatabaseUrl), not a database to use. */
  databaseUrl?: string;
  natsUrl?: string;
}

const LOCAL_POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres";
const LOCAL_NATS = "nats://127.0.0.1:4222";

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

function isTruthy(value: string | undefined): boolean {
  return value !== undefined && value !== "" && value !== "0" && value.toLowerCase() !== "false";
}
