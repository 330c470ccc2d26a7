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
  /** [column, property, conversion] in select order. */
  columns: readonly (readonly [string, string, Conversion | undefined])[];
}

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
    const pk = meta.properties[meta.primaryKeys[0]!]!.fieldNames[0]!;
    const list = columns.map(([column]) => `"${column}"`).join(", ");
    statement = {
      name: `meshwork_by_id_${meta.tableName}`,
      text: `select ${list} from "${meta.tableName}" where "${pk}" = $1`,
      columns,
    };
    statements.set(meta.className, statement);
    return statement;
  };

  return {
    async byId<T extends object>(entity: EntitySchema<T, never>, id: string | number): Promise<T | null> {
      const statement = statementFor(orm.getMetadata().get(entity.meta.className));
      const client = await lane.acquire();
      let rows: Record<string, unknown>[];
      try {
        ({ rows } = await client.query({ name: statement.name, text: statement.text, values: [id] }));
      } catch (error) {
        lane.release(client, true);
        throw error;
      }
      lane.release(client);
      const row = rows[0];
      if (!row) return null;
      const out: Record<string, unknown> = {};
      for (const [column, property, convert] of statement.columns) {
        const value = row[column];
        out[property] = convert && value !== null ? convert(value) : value;
      }
      return out as T;
    },
  };
}
