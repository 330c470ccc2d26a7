// Opens the process's database: a real PostgreSQL when a URL is given, otherwise embedded PGlite; then migrates.
import { Migrator } from "@mikro-orm/migrations";
import { MikroORM, PostgreSqlDriver, type Options } from "@mikro-orm/postgresql";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "./embedded-postgres.js";
import { MIGRATIONS_TABLE, applyMigrations, collectModules, migrationList } from "./migrations.js";
import { OrmLogger } from "./orm-logger.js";
import { createPreparedReads } from "./prepared-reads.js";
import { redactUrl } from "./redact-url.js";
import type { Database, DatabaseOptions, HealthStatus } from "./types.js";

const DEFAULT_POOL_SIZE = 10;
const HEALTH_TIMEOUT_MS = 5_000;

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const logger = options.logger.child({ component: "database" });
  const modules = collectModules(options.modules);
  const mode = options.url ? "postgres" : "embedded";

  let embedded: EmbeddedPostgres | undefined;
  let connection: Pick<Options, "clientUrl" | "host" | "port" | "user" | "dbName" | "pool">;
  if (options.url) {
    logger.info({ url: redactUrl(options.url), modules: modules.map((m) => m.name) }, "opening PostgreSQL");
    connection = { clientUrl: options.url, pool: { min: 0, max: options.poolSize ?? DEFAULT_POOL_SIZE } };
  } else {
    embedded = await startEmbeddedPostgres({ dataDir: options.dataDir, logger });
    if (options.poolSize !== undefined && options.poolSize !== 1) {
      logger.debug({ poolSize: options.poolSize }, "embedded PostgreSQL serves one connection; poolSize ignored");
    }
    connection = {
      host: embedded.host,
      port: embedded.port,
      user: embedded.user,
      dbName: embedded.database,
      // min 1 keeps the single connection open instead of reaping and re-handshaking it when idle.
      pool: { min: 1, max: 1 },
    };
  }

  let orm: MikroORM;
  try {
    orm = await MikroORM.init({
      driver: PostgreSqlDriver,
      ...connection,
      entities: modules.flatMap((m) => m.entities),
      discovery: { warnWhenNoEntities: false },
      extensions: [Migrator],
      migrations: {
        tableName: MIGRATIONS_TABLE,
        migrationsList: migrationList(modules),
        // The snapshot is only for generating migrations and would be written into the working directory.
        snapshot: false,
        transactional: true,
        allOrNothing: true,
        // Disabling FK checks needs superuser rights (session_replication_role) that managed servers deny.
        disableForeignKeys: false,
      },
      // The migrator creates the database when missing; the ORM's own check at connect adds nothing.
      ensureDatabase: false,
      forceUtcTimezone: true,
      colors: false,
      debug: options.debug ?? false,
      loggerFactory: (loggerOptions) => new OrmLogger(loggerOptions, logger),
    });
  } catch (error) {
    await embedded?.close();
    throw sanitize(error, options.url);
  }

  try {
    await applyMigrations(orm, { serialize: mode === "postgres", logger });
  } catch (error) {
    await orm.close(true);
    await embedded?.close();
    throw sanitize(error, options.url);
  }

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      try {
        await orm.close(true);
      } finally {
        await embedded?.close();
      }
      logger.info("database closed");
    })();
    return closing;
  };

  const health = async (): Promise<HealthStatus> => {
    if (closing) return { ok: false, detail: "closed" };
    if (embedded?.isClosed()) return { ok: false, detail: "embedded PostgreSQL stopped" };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<HealthStatus>((resolve) => {
      // A long transaction holds the embedded pool's only connection; report it instead of hanging.
      timer = setTimeout(() => resolve({ ok: false, detail: `no answer within ${HEALTH_TIMEOUT_MS} ms` }), HEALTH_TIMEOUT_MS);
    });
    const check = orm.em
      .getConnection()
      .checkConnection()
      .then((r): HealthStatus => (r.ok ? { ok: true } : { ok: false, detail: sanitizeText(r.reason, options.url) }));
    try {
      return await Promise.race([check, timeout]);
    } finally {
      clearTimeout(timer);
    }
  };

  return { orm, em: () => orm.em.fork(), reads: createPreparedReads(orm), close, health, mode };
}

// Driver errors can echo the connection string; keep the password out of whatever the caller logs.
function sanitize(error: unknown, url: string | undefined): unknown {
  if (!url || !(error instanceof Error)) return error;
  error.message = sanitizeText(error.message, url);
  return error;
}

function sanitizeText(text: string, url: string | undefined): string {
  if (!url) return text;
  let password: string;
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {
    return text;
  }
  return password ? text.split(url).join(redactUrl(url)).split(password).join("***") : text;
}
