// Raw SQL on the entity manager's connection: inside a transaction it runs on the transaction's
// connection (embedded PGlite has only one), with real bind parameters, so arrays travel as
// PostgreSQL arrays for unnest-based multi-row writes.
//
// Statements are deliberately not named (prepared): a named statement soon runs on a cached
// generic plan, and a generic plan made while a table was small (a fresh database) keeps its
// sequential scan after the table has grown, until the next ANALYZE. Planning each time costs
// less than that risk; the statements carry many rows each, so it is paid once per chunk.
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

/**
 * PostgreSQL array literals, built directly for the multi-row statements: node-postgres would
 * otherwise quote and escape every element of every array (a large share of a bulk chunk's CPU).
 * Each is bound as one text parameter and cast (`?::uuid[]`), so nothing reaches the SQL text.
 */
export const pgArray = {
  /** uuids as stored or validated; anything else is quoted like text. */
  uuids(values: readonly (string | null)[]): string {
    for (const v of values)
      if (v === null || v === undefined || !plainUuid.test(v)) return literal(values, (x) => (plainUuid.test(x) ? x : quote(x)));
    return `{${values.join(",")}}`;
  },
  numbers(values: readonly (number | null)[]): string {
    return literal(values, String);
  },
  /** As toISOString writes them, which timestamptz reads back exactly. */
  times(values: readonly (Date | null)[]): string {
    return literal(values, (d) => d.toISOString());
  },
  texts(values: readonly (string | null)[]): string {
    return literal(values, quote);
  },
  booleans(values: readonly boolean[]): string {
    return literal(values, (v) => (v ? "t" : "f"));
  },
};

function literal<T>(values: readonly (T | null)[], element: (value: T) => string): string {
  const parts = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    parts[i] = v === null || v === undefined ? "NULL" : element(v);
  }
  return `{${parts.join(",")}}`;
}

const plainUuid = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** An array element in double quotes, backslashes and quotes escaped (as node-postgres does). */
function quote(value: string): string {
  return `"${value.replace(/[\\"]/g, "\\$&")}"`;
}
