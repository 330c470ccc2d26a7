// Reads by primary key on the hot path, without the unit of work. em.findOne builds its SQL with
// the query builder and hydrates an entity on every call (about 240 µs of CPU here); this builds
// the statement once per entity from MikroORM's metadata and runs it as a named prepared
// statement on a connection of the ORM's own pool (about 30 µs), kept between reads while nothing
// else wants it (read-lane.ts). Same pool, same connections, same mapping of columns to
// properties; what it gives up is the identity map, which a request that only reads one row and
// answers it has no use for.
import type { EntityMetadata, EntitySchema, MikroORM } from "@mikro-orm/core";
import type { PostgreSqlConnection } from "@mikro-orm/postgresql";
import { createReadLane, type PoolOwner } from "./read-lane.js";

interface Statement {
  name: string;
  text: string;
  /** The same columns for many keys: `where pk = any($1)`. */
  manyName: string;
  manyText: string;
  /** The primary key column, and how a key is compared with its value in a row (uuids: lower case). */
  pk: string;
  keyOf: (id: string | number) => string;
  /** `select <every column> from <table>`, for `where`. */
  select: string;
  /** [column, property, conversion] in select order. */
  columns: readonly (readonly [string, string, Conversion | undefined])[];
}

/** Reads of one entity waiting for the end of the current turn. */
type Pending = Map<
  string,
  { id: string | number; waiters: { resolve: (row: Record<string, unknown> | undefined) => void; reject: (error: unknown) => void }[] }
>;

type Conversion = (value: unknown) => unknown;

// MikroORM has pg hand timestamps over as text (`2026-11-21 11:08:19.809751+00`, the session runs
// in UTC), which Date reads as it is; modules' raw SQL reads them the same way.
const toDate: Conversion = (value) => (value instanceof Date ? value : new Date(String(value)));

// Column types read here, with how pg's value becomes the entity property (none: as pg gives it).
// Any other type is refused when the statement is built, not misread later.
const CONVERSIONS = new Map<string, Conversion | undefined>([
  ["timestamptz", toDate],
  ["timestamp with time zone", toDate],
]);
const PASS_THROUGH = new Set([
  "uuid",
  "text",
  "varchar",
  "character varying",
  "boolean",
  "double precision",
  "float8",
  "integer",
  "int",
  "int4",
  "smallint",
  "jsonb",
  "text[]",
]);

export interface PreparedReads {
  /** The row with this primary key as the entity's properties, or null. */
  byId<T extends object>(entity: EntitySchema<T, never>, id: string | number): Promise<T | null>;
  /**
   * byId for a read nearly every request makes (a token's revocation check): the reads of one
   * entity asked for in the same turn of the event loop share one statement
   * (`where pk = any($1)`), so 20 concurrent requests pay for one round trip instead of 20. A
   * lone read waits only for the end of the current turn. Same answer as byId.
   */
  byIdShared<T extends object>(entity: EntitySchema<T, never>, id: string | number): Promise<T | null>;
  /**
   * The rows of `entity` that `clause` picks (the SQL after `from <table>`: `where ... order by ...`,
   * `$1`-style parameters), as the entity's properties; run as the named prepared statement `name`
   * (the same `name` must always carry the same clause).
   */
  where<T extends object>(entity: EntitySchema<T, never>, name: string, clause: string, values: unknown[]): Promise<T[]>;
  /**
   * One statement of a hot path (`$1`-style parameters), run on its own (autocommitted) as the
   * named prepared statement `name`: the same `name` must always carry the same `text`. Rows come
   * as pg gives them: column names, timestamps as text.
   */
  statement<Row extends object>(name: string, text: string, values: unknown[]): Promise<Row[]>;
}

export function createPreparedReads(orm: MikroORM): PreparedReads {
  const statements = new Map<string, Statement>();
  const lane = createReadLane(() => (orm.em.getConnection() as PostgreSqlConnection).getKnex().client as PoolOwner);

  const statementFor = (meta: EntityMetadata): Statement => {
    let statement = statements.get(meta.className);
    if (statement) return statement;
    if (meta.primaryKeys.length !== 1) throw new Error(`${meta.className}: byId needs exactly one primary key column`);
    const columns = meta.props
      .filter((prop) => prop.persist !== false && prop.fieldNames?.length === 1)
      .map((prop) => {
        const type = (prop.columnTypes?.[0] ?? "").toLowerCase();
        if (!PASS_THROUGH.has(type) && !CONVERSIONS.has(type)) {
          throw new Error(`${meta.className}.${prop.name}: column type ${type} is not supported by byId`);
        }
        return [prop.fieldNames[0]!, prop.name, CONVERSIONS.get(type)] as const;
      });
    const pkProp = meta.properties[meta.primaryKeys[0]!]!;
    const pk = pkProp.fieldNames[0]!;
    const pkType = (pkProp.columnTypes?.[0] ?? "").toLowerCase();
    const list = columns.map(([column]) => `"${column}"`).join(", ");
    const select = `select ${list} from "${meta.tableName}"`;
    statement = {
      name: `meshwork_by_id_${meta.tableName}`,
      text: `${select} where "${pk}" = $1`,
      select,
      manyName: `meshwork_by_ids_${meta.tableName}`,
      manyText: `${select} where "${pk}" = any($1)`,
      pk,
      keyOf: pkType === "uuid" ? (id) => String(id).toLowerCase() : (id) => String(id),
      columns,
    };
    statements.set(meta.className, statement);
    return statement;
  };

  const run = async (name: string, text: string, values: unknown[]): Promise<Record<string, unknown>[]> => {
    const client = await lane.acquire();
    let rows: Record<string, unknown>[];
    try {
      ({ rows } = await client.query({ name, text, values }));
    } catch (error) {
      lane.release(client, true);
      throw error;
    }
    lane.release(client);
    return rows;
  };

  const toEntity = <T>(statement: Statement, row: Record<string, unknown> | undefined): T | null => {
    if (!row) return null;
    const out: Record<string, unknown> = {};
    for (const [column, property, convert] of statement.columns) {
      const value = row[column];
      out[property] = convert && value !== null ? convert(value) : value;
    }
    return out as T;
  };

  const pending = new Map<Statement, Pending>();

  /** Runs the reads of `statement` gathered this turn: one statement for all, or alone when only one. */
  const flush = async (statement: Statement, batch: Pending): Promise<void> => {
    const keys = [...batch.values()];
    try {
      const rows =
        keys.length === 1
          ? await run(statement.name, statement.text, [keys[0]!.id])
          : await run(statement.manyName, statement.manyText, [keys.map((k) => k.id)]);
      const byKey = new Map(rows.map((row) => [statement.keyOf(row[statement.pk] as string | number), row]));
      for (const [key, { waiters }] of batch) for (const w of waiters) w.resolve(byKey.get(key));
    } catch (error) {
      if (keys.length === 1) {
        for (const w of keys[0]!.waiters) w.reject(error);
        return;
      }
      // One bad key (say, not a uuid) must not fail the others: each is read again on its own.
      for (const { id, waiters } of keys) {
        run(statement.name, statement.text, [id]).then(
          (rows) => {
            for (const w of waiters) w.resolve(rows[0]);
          },
          (own: unknown) => {
            for (const w of waiters) w.reject(own);
          },
        );
      }
    }
  };

  return {
    async byIdShared<T extends object>(entity: EntitySchema<T, never>, id: string | number): Promise<T | null> {
      const statement = statementFor(orm.getMetadata().get(entity.meta.className));
      let batch = pending.get(statement);
      if (!batch) {
        const gathered: Pending = new Map();
        batch = gathered;
        pending.set(statement, gathered);
        setImmediate(() => {
          pending.delete(statement);
          void flush(statement, gathered);
        });
      }
      const key = statement.keyOf(id);
      let entry = batch.get(key);
      if (!entry) {
        entry = { id, waiters: [] };
        batch.set(key, entry);
      }
      const row = await new Promise<Record<string, unknown> | undefined>((resolve, reject) => entry.waiters.push({ resolve, reject }));
      return toEntity<T>(statement, row);
    },

    async statement<Row extends object>(name: string, text: string, values: unknown[]): Promise<Row[]> {
      return (await run(name, text, values)) as Row[];
    },

    async byId<T extends object>(entity: EntitySchema<T, never>, id: string | number): Promise<T | null> {
      const statement = statementFor(orm.getMetadata().get(entity.meta.className));
      const rows = await run(statement.name, statement.text, [id]);
      return toEntity<T>(statement, rows[0]);
    },
    async where<T extends object>(entity: EntitySchema<T, never>, name: string, clause: string, values: unknown[]): Promise<T[]> {
      const statement = statementFor(orm.getMetadata().get(entity.meta.className));
      const rows = await run(name, `${statement.select} ${clause}`, values);
      return rows.map((row) => toEntity<T>(statement, row)!);
    },
  };
}
