// Raw SQL with real bind parameters on an entity manager's connection, inside its transaction
// when it has one: arrays travel as PostgreSQL arrays (for `= any(?)` and unnest), and nothing
// is interpolated into the statement text. Not named (prepared): a cached generic plan made
// while the outbox was small would keep scanning it whole after it has grown.
import type { EntityManager } from "@mikro-orm/core";

export type Query = <R = Record<string, unknown>>(sql: string, bindings?: readonly unknown[]) => Promise<R[]>;

interface RawLike extends PromiseLike<unknown> {
  transacting(trx: unknown): unknown;
}

interface KnexLike {
  raw(sql: string, bindings: readonly unknown[]): RawLike;
}

export function queryOn(em: EntityManager): Query {
  const connection = em.getConnection() as unknown as { getKnex?: () => KnexLike };
  if (typeof connection.getKnex !== "function") throw new Error("the outbox needs an SQL entity manager");
  const knex = connection.getKnex();
  return async <R>(sql: string, bindings: readonly unknown[] = []) => {
    const raw = knex.raw(sql, bindings);
    const trx = em.getTransactionContext();
    if (trx) raw.transacting(trx);
    const result = (await raw) as { rows: R[] };
    return result.rows;
  };
}

/**
 * Array literals for the outbox's multi-row statements, built directly rather than by
 * node-postgres' generic per-element conversion; bound as one text parameter each and cast.
 */
export const arrayLiteral = {
  /** Values already known to be UUIDs. */
  uuids: (values: readonly string[]): string => `{${values.join(",")}}`,
  /** bytea in hex form (`\x…`, the backslash escaped for the array syntax). */
  bytes: (values: readonly Uint8Array[]): string =>
    `{${values.map((v) => `\\\\x${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("hex")}`).join(",")}}`,
};

/** An array element in double quotes, backslashes and quotes escaped (as node-postgres does). */
export function quoteElement(value: string): string {
  return `"${value.replace(/[\\"]/g, "\\$&")}"`;
}
