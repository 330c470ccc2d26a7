// The Tor exit list kept in PostgreSQL: fetched from Protection:TorExits:SourceUrl at start and
// every Protection:TorExits:RefreshIntervalSeconds. A failed or empty fetch keeps the last list
// (and is logged); a successful one replaces it and publishes protection.v1.tor_exits.refreshed.
import type { EntityManager } from "@mikro-orm/postgresql";
import { TorExitsRefreshedSchema } from "../../gen/protection/v1/events_pb.js";
import type { UnitOfWork } from "../runtime/outbox/index.js";
import { pgTextArray } from "./blocklist-versions.js";
import { parseTorExitList } from "./tor-exits.js";

interface Logger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

const FETCH_TIMEOUT_MS = 30_000;

function sql<T = Record<string, unknown>>(em: EntityManager, text: string, params: unknown[] = []): Promise<T[]> {
  return em.getConnection().execute<T[]>(text, params, "all", em.getTransactionContext());
}

/** The list as GET /v1/tor-exits answers it: updated_at null before the first refresh. */
export async function readTorExits(em: EntityManager): Promise<{ updatedAt: Date | null; exits: string[] }> {
  const [row] = await sql<{ exits: string[]; updated_at: Date | string }>(
    em,
    `select "exits", "updated_at" from "protection_tor_exit_list" where "id" = 1`,
  );
  return row ? { updatedAt: new Date(row.updated_at), exits: row.exits } : { updatedAt: null, exits: [] };
}

export interface TorExitWorker {
  /** One refresh now: true when a list was stored. */
  refresh(): Promise<boolean>;
  stop(): Promise<void>;
}

export function startTorExitWorker(
  deps: { uow: UnitOfWork; logger: Logger },
  options: { sourceUrl: string; refreshIntervalSeconds: number },
): TorExitWorker {
  const { uow, logger } = deps;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let stopped = false;

  async function refresh(): Promise<boolean> {
    let body: string;
    try {
      const res = await fetch(options.sourceUrl, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
      body = await res.text();
      if (!res.ok) throw new Error(`the source answered ${res.status}`);
    } catch (err) {
      logger.warn(
        { source: options.sourceUrl, err: err instanceof Error ? err.message : String(err) },
        "Tor exit list fetch failed; the last list is kept",
      );
      return false;
    }
    const exits = parseTorExitList(body);
    if (exits.length === 0) {
      logger.warn({ source: options.sourceUrl }, "the Tor exit list fetched holds no address; the last list is kept");
      return false;
    }
    const changed = await uow.run(async (tx) => {
      const [before] = await sql<{ exits: string[] }>(tx.em, `select "exits" from "protection_tor_exit_list" where "id" = 1 for update`);
      const differs = !before || before.exits.length !== exits.length || before.exits.some((e, i) => e !== exits[i]);
      await sql(
        tx.em,
        `insert into "protection_tor_exit_list" ("id", "exits", "updated_at") values (1, ?::text[], ?)
         on conflict ("id") do update set "exits" = excluded."exits", "updated_at" = excluded."updated_at"`,
        [pgTextArray(exits), new Date()],
      );
      tx.record(TorExitsRefreshedSchema, { exitCount: exits.length, changed: differs });
      return differs;
    });
    logger.info({ exits: exits.length, changed }, "Tor exit list refreshed");
    return true;
  }

  const tick = () => {
    running = refresh()
      .catch((err) => {
        logger.warn({ err: err instanceof Error ? err.message : String(err) }, "Tor exit list refresh failed; the last list is kept");
      })
      .finally(() => {
        running = undefined;
        schedule();
      });
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(tick, options.refreshIntervalSeconds * 1000);
    timer.unref();
  };
  // At start: fetched at once, without holding the start up.
  tick();

  return {
    refresh,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
