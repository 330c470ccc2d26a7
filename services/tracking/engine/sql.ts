// Raw SQL on the entity manager's connection: inside a transaction it runs on the transaction's
// connection (embedded PGlite has only one), with real bind parameters, so arrays travel as
// PostgreSQL arrays for unnest-based multi-row writes.
import type { EntityManager } from "@mikro-orm/postgresql";

export type Query = <R = Record<string, unknown>>(sql: string, bindings?: readonly unknown[]) => Promise<R[]>;

export function queryOn(em: EntityManager): Query {
  const knex = em.getKnex();
  return async <R>(sql: string, bindings: readonly unknown[] = []) => {
    const raw = knex.raw(sql, bindings as never);
    const trx = em.getTransactionContext();
    if (trx) raw.transacting(trx);
    const result = (await raw) as { rows: R[] };
    return result.rows;
  };
}

/** pg answers timestamptz as text here (MikroORM turns its type parser off). */
export function toDate(value: unknown): Date {
  return value instanceof Date ? value : new Date(String(value));
}

export function toDateOrNull(value: unknown): Date | null {
  return value === null || value === undefined ? null : toDate(value);
}
