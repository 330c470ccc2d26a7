// A stream token table: tokens by the SHA-256 of the token (never the token itself), so every
// instance accepts a token any of them issued. Each module that issues tokens has its own table,
// created by a migration it lists under its own name; a table a module already had keeps its rows.
import { type Constructor, EntitySchema } from "@mikro-orm/core";
import type { Migration } from "@mikro-orm/migrations";
import { streamTokenTableMigration } from "./migrations/stream-tokens-0001-table.js";

export interface StreamTokenRow {
  /** Hex SHA-256 of the token. */
  tokenHash: string;
  expiresAt: Date;
  createdAt: Date;
}

export interface StreamTokenTable {
  name: string;
  entity: EntitySchema<StreamTokenRow>;
  /**
   * In order; the module lists each under a name of its own (`<module>-...`), and appends the ones
   * a later version of this library adds.
   */
  migrations: Constructor<Migration>[];
}

const NAME = /^[a-z][a-z0-9_]{0,50}$/;

/** A token table, e.g. `streamTokenTable("billing_stream_token")`. */
export function streamTokenTable(name: string): StreamTokenTable {
  // The name goes into SQL text as an identifier: only a plain lower-case name is taken.
  if (!NAME.test(name)) throw new Error(`stream token table name "${name}" must be a lower-case SQL name`);
  const entityName = name
    .split("_")
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("");
  const entity = new EntitySchema<StreamTokenRow>({
    name: entityName,
    tableName: name,
    properties: {
      tokenHash: { type: "text", primary: true },
      expiresAt: { type: "Date", columnType: "timestamptz" },
      createdAt: { type: "Date", columnType: "timestamptz" },
    },
  });
  return { name, entity, migrations: [streamTokenTableMigration(name)] };
}
