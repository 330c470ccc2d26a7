// Public shapes of the database module: what a service module contributes and what a process gets back.
import type { Constructor, EntitySchema } from "@mikro-orm/core";
import type { Migration } from "@mikro-orm/migrations";
import type { EntityManager, MikroORM } from "@mikro-orm/postgresql";

import type { LoggerLike as Logger } from "../logging/logger-like.js";
import type { PreparedReads } from "./prepared-reads.js";

/** Re-exported so this module's public types stay self-contained. */
export type { Logger };

export interface NamedMigration {
  /** Must start with `${module.name}-`: every module shares one migrations table. */
  name: string;
  class: Constructor<Migration>;
}

export interface DatabaseModule {
  name: string;
  // EntitySchema is invariant in its type parameters; `any` lets each module keep its own row types.
  // biome-ignore lint/suspicious/noExplicitAny: EntitySchema is invariant; each module keeps its row types
  entities: EntitySchema<any, any>[];
  migrations: NamedMigration[];
}

export interface DatabaseOptions {
  /** PostgreSQL URL; without it an embedded PGlite under `dataDir` is served on a local socket. */
  url?: string;
  dataDir: string;
  /** Connection pool size for a real server (default 10); embedded mode always uses 1. */
  poolSize?: number;
  modules: DatabaseModule[];
  logger: Logger;
  /** Log every SQL statement at debug level. */
  debug?: boolean;
}

export interface HealthStatus {
  ok: boolean;
  detail?: string;
}

export interface Database {
  orm: MikroORM;
  /**
   * A fresh EntityManager fork: one per request or unit of work. Inside `em.transactional(cb)` use the
   * callback's em: in embedded mode the pool has a single connection, which the transaction holds, so a
   * second fork queried there would wait for it (and time out).
   */
  em(): EntityManager;
  /**
   * Hot-path reads by primary key as named prepared statements on the ORM's pool, without an
   * EntityManager (no identity map). For a request that reads one row and answers it.
   */
  reads: PreparedReads;
  close(): Promise<void>;
  health(): Promise<HealthStatus>;
  mode: "embedded" | "postgres";
}
