// Database module: MikroORM on PostgreSQL or embedded PGlite, with per-module migrations run at start.
export { openDatabase } from "./open-database.js";
export { findPage, type Page } from "./find-page.js";
export { redactUrl } from "./redact-url.js";
export { MIGRATIONS_TABLE } from "./migrations.js";
export type { PreparedReads } from "./prepared-reads.js";
export type { Database, DatabaseModule, DatabaseOptions, HealthStatus, Logger, NamedMigration } from "./types.js";
export { describeDbError, isDatabaseUnavailable, isDbError, type DbErrorDescription } from "./describe-db-error.js";
