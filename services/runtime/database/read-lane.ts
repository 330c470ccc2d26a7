// Connections for hot reads, borrowed from the ORM's pool and kept between reads while nobody else
// asks the pool for one. A pool acquire (knex over tarn) costs about two dozen promises, a timer and
// a validation round; a read that finds a kept connection costs none of that. The pool stays the
// owner: the moment anything else asks it for a connection, every idle kept one goes back at once
// (tarn announces each acquire before it looks for a free connection), and a read that finishes
// while someone waits returns its connection instead of keeping it. So the ORM's own work never
// waits on connections reads are not using, and with a pool of one (embedded PostgreSQL) reads and
// transactions still take turns.

/** A pg client as the ORM's pool hands it out: only what the lane and its readers use. */
export interface PooledClient {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: Record<string, unknown>[] }>;
  /** Set by knex when the connection failed; such a connection goes back to the pool to be checked. */
  __knex__disposed?: unknown;
}

/** knex's client, as far as the lane needs it. */
export interface PoolOwner {
  acquireConnection(): Promise<PooledClient>;
  releaseConnection(client: PooledClient): Promise<void> | void;
  /** tarn's pool; undefined before knex made it. */
  pool?: PoolEvents;
}

interface PoolEvents {
  on(event: "acquireRequest" | "poolDestroyRequest", listener: () => void): void;
  numPendingAcquires(): number;
}

export interface ReadLane {
  acquire(): Promise<PooledClient> | PooledClient;
  /** Back after a read; `failed` sends it to the pool, which checks it before anyone uses it again. */
  release(client: PooledClient, failed?: boolean): void;
}

export function createReadLane(owner: () => PoolOwner): ReadLane {
  const idle: PooledClient[] = [];
  let watched: PoolEvents | undefined;
  let acquiring = false;
  let closing = false;

  const giveBackIdle = (): void => {
    const knex = owner();
    for (const client of idle.splice(0)) void knex.releaseConnection(client);
  };

  /** Listens to the pool once per pool instance: others' acquires and its destruction. */
  const watch = (knex: PoolOwner): void => {
    const pool = knex.pool;
    if (!pool || pool === watched) return;
    watched = pool;
    pool.on("acquireRequest", () => {
      if (!acquiring) giveBackIdle();
    });
    pool.on("poolDestroyRequest", () => {
      closing = true;
      giveBackIdle();
    });
  };

  return {
    acquire() {
      const kept = idle.pop();
      if (kept !== undefined) return kept;
      const knex = owner();
      // tarn announces the request synchronously, inside this call: not a reason to give back.
      acquiring = true;
      try {
        const pending = knex.acquireConnection();
        watch(knex);
        return pending;
      } finally {
        acquiring = false;
      }
    },

    release(client, failed = false) {
      const knex = owner();
      if (failed || closing || client.__knex__disposed !== undefined || (watched?.numPendingAcquires() ?? 1) > 0) {
        void knex.releaseConnection(client);
        return;
      }
      idle.push(client);
    },
  };
}
