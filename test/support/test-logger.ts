// A logger for suites: silent unless MESHWORK_TEST_LOG names a level, so failures can be traced on demand.
import { pino } from "pino";

export function testLogger(name: string, env: NodeJS.ProcessEnv = process.env) {
  return pino({ name, level: env.MESHWORK_TEST_LOG || "silent" });
}
