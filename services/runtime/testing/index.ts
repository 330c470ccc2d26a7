// Helpers shared by test suites: choosing embedded or real infrastructure and isolating each run.
export { realInfra, type RealInfra } from "./real-infra.js";
export { testLogger } from "./test-logger.js";
export { createTestDatabaseUrl, type TestDatabase } from "../database/test-database.js";
export { widgetEvents, type WidgetEvents } from "./test-events.js";
