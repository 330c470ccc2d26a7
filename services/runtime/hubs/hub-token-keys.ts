// The keys hub connection tokens are signed with, kept in a module's own table so every instance
// (and every gateway in front of them) signs and admits with the same ones. The first instance to
// need a key creates it; the others read it. Cached per process for a minute, so a key added by
// rotation reaches every instance without a restart.
import { randomBytes } from "node:crypto";
import { type Constructor, EntitySchema } from "@mikro-orm/core";
import type { Migration } from "@mikro-orm/migrations";
import type { Database } from "../database/index.js";
import { hubTokenKeyTableMigration } from "./migrations/hub-token-keys-0001-table.js";

export interface HubTokenKeyRow {
  keyId: string;
  key: Buffer;
  createdAt: Date;
}

export interface HubTokenKeyTable {
  name: string;
  entity: EntitySchema<HubTokenKeyRow>;
  /** In order; the module lists each under a name of its own (`<module>-...`). */
  migrations: Constructor<Migration>[];
}

const NAME = /^[a-z][a-z0-9_]{0,50}$/;

/** A key table, e.g. `hubTokenKeyTable("agents_hub_token_key")`. */
export function hubTokenKeyTable(name: string): HubTokenKeyTable {
  // The name goes into SQL text as an identifier: only a plain lower-case name is taken.
  if (!NAME.test(name)) throw new Error(`hub token key table name "${name}" must be a lower-case SQL name`);
  const entityName = name
    .split("_")
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("");
  const entity = new EntitySchema<HubTokenKeyRow>({
    name: entityName,
    tableName: name,
    properties: {
      keyId: { type: "text", primary: true },
      key: { type: "Buffer", columnType: "bytea" },
      createdAt: { type: "Date", columnType: "timestamptz" },
    },
  });
  return { name, entity, migrations: [hubTokenKeyTableMigration(name)] };
}

export interface HubTokenKeysOptions {
  readonly db: Database;
  readonly table: HubTokenKeyTable;
  /** How long a process keeps the keys it read; default 60 s. */
  readonly cacheSeconds?: number;
}

/** The keys, newest first: what createHubConnectionTokens({ keys }) takes. */
export function hubTokenKeys(options: HubTokenKeysOptions): () => Promise<readonly Uint8Array[]> {
  const { db, table } = options;
  const cacheMs = (options.cacheSeconds ?? 60) * 1000;
  let cached: { keys: readonly Uint8Array[]; until: number } | undefined;
  let loading: Promise<readonly Uint8Array[]> | undefined;

  const load = async (): Promise<readonly Uint8Array[]> => {
    const em = db.em();
    const read = () => em.execute<{ key: Buffer }[]>(`select "key" from "${table.name}" order by "created_at" desc, "key_id" desc`);
    let rows = await read();
    if (rows.length === 0) {
      // Two instances starting together both try; the first insert stands and both read it.
      await em.execute(`insert into "${table.name}" ("key_id", "key", "created_at") values ('k1', ?, now()) on conflict do nothing`, [
        randomBytes(32),
      ]);
      rows = await read();
    }
    return rows.map((r) => new Uint8Array(r.key));
  };

  return async () => {
    if (cached && Date.now() < cached.until) return cached.keys;
    loading ??= load()
      .then((keys) => {
        cached = { keys, until: Date.now() + cacheMs };
        return keys;
      })
      .finally(() => {
        loading = undefined;
      });
    return loading;
  };
}
