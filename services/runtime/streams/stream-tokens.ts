// Stream tokens: 32 random bytes (base64url) handed to the client once; only their SHA-256
// is stored, with the expiry, in PostgreSQL, so any instance checks a token any other issued and a
// leaked table holds nothing usable. Expired rows are pruned now and then by whoever issues one.
import { createHash, randomBytes } from "node:crypto";
import type { Database } from "../database/index.js";
import type { StreamTokenTable } from "./stream-token-table.js";

const TOKEN_BYTES = 32;
// base64url of 32 bytes, without padding: 43 characters.
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;
const PRUNE_EVERY_MS = 60_000;

export interface IssuedStreamToken {
  token: string;
  expiresAt: Date;
}

export interface StreamTokens {
  issue(): Promise<IssuedStreamToken>;
  /** Whether the token was issued and has not expired. */
  isValid(token: string): Promise<boolean>;
}

export interface StreamTokenOptions {
  db: Database;
  /** The module's token table (see streamTokenTable). */
  table: StreamTokenTable;
  ttlMinutes: number;
  now?: () => Date;
}

export function hashStreamToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

export function createStreamTokens({ db, table, ttlMinutes, now = () => new Date() }: StreamTokenOptions): StreamTokens {
  let lastPrune = 0;

  async function prune(at: Date): Promise<void> {
    if (at.getTime() - lastPrune < PRUNE_EVERY_MS) return;
    lastPrune = at.getTime();
    await db.em().getConnection().execute(`delete from "${table.name}" where "expires_at" <= ?`, [at]);
  }

  return {
    async issue() {
      const issuedAt = now();
      const token = randomBytes(TOKEN_BYTES).toString("base64url");
      const expiresAt = new Date(issuedAt.getTime() + ttlMinutes * 60_000);
      await db.em().insert(table.entity, { tokenHash: hashStreamToken(token), expiresAt, createdAt: issuedAt });
      await prune(issuedAt);
      return { token, expiresAt };
    },

    async isValid(token) {
      // Anything not shaped like a token was never issued; no need to ask the database.
      if (!TOKEN_SHAPE.test(token)) return false;
      const rows = await db
        .em()
        .getConnection()
        .execute<{ one: number }[]>(`select 1 as one from "${table.name}" where "token_hash" = ? and "expires_at" > ?`, [
          hashStreamToken(token),
          now(),
        ]);
      return rows.length > 0;
    },
  };
}
