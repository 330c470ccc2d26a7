// Bulk enrollment tokens of organizations: making one, the key that seals it at rest for its QR
// code, and the one redemption other parts call (POST /v1/enroll/{token}), which counts a use
// atomically.
//
// Why sealed and not stored in clear: a redemption needs only the SHA-256 (an indexed lookup), but
// the QR endpoint must render the token again, so some recoverable form has to be kept. In clear,
// any read of the table (a backup, a replica, a support dump, an injection elsewhere) would hand
// out live enrollment tokens. Sealed with AES-256-GCM, that reader also needs the key: with
// Protection:Organizations:TokenKeyFile the key never enters the database at all; without it, the
// generated key sits in its own table, so a leak of the token table alone still reveals nothing.
// The token's id is the additional authenticated data: a sealed token copied onto another row
// does not open there.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { Code } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { OrganizationTokenRedeemedSchema } from "../../gen/protection/v1/events_pb.js";
import { ConfigError } from "../runtime/config/index.js";
import type { Transaction } from "../runtime/outbox/index.js";
import { refusal } from "./errors.js";
import { OrganizationTokenKeyEntity, type OrganizationTokenTier } from "./store/organization-tokens.js";

const PREFIX = "otk_";
const TOKEN_SHAPE = /^otk_[A-Za-z0-9_-]{43}$/;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const KEY_INFO = "meshwork protection organization token seal v1";

export const tokenNotFound = () => refusal(Code.NotFound, "TOKEN_NOT_FOUND", "No such token.");

/** A new token: `otk_` + 32 random bytes in base64url (43 characters). */
export function newOrganizationToken(): string {
  return PREFIX + randomBytes(32).toString("base64url");
}

export function hashOrganizationToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** The AES-256-GCM key, derived from a secret of at least 32 bytes. */
export interface TokenSealKey {
  seal(tokenId: string, token: string): Buffer;
  /** The token, or undefined when it was sealed under another key (or altered). */
  open(tokenId: string, sealed: Buffer): string | undefined;
}

export function tokenSealKey(secret: Buffer): TokenSealKey {
  const key = Buffer.from(hkdfSync("sha256", secret, Buffer.alloc(0), KEY_INFO, 32));
  return {
    seal(tokenId, token) {
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv("aes-256-gcm", key, nonce);
      cipher.setAAD(Buffer.from(tokenId));
      const body = Buffer.concat([cipher.update(token, "utf8"), cipher.final()]);
      return Buffer.concat([nonce, body, cipher.getAuthTag()]);
    },
    open(tokenId, sealed) {
      if (sealed.length < NONCE_BYTES + TAG_BYTES) return undefined;
      try {
        const decipher = createDecipheriv("aes-256-gcm", key, sealed.subarray(0, NONCE_BYTES));
        decipher.setAAD(Buffer.from(tokenId));
        decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
        return Buffer.concat([decipher.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES)), decipher.final()]).toString("utf8");
      } catch {
        return undefined;
      }
    },
  };
}

/**
 * The seal key: from Protection:Organizations:TokenKeyFile, or generated on the first start and
 * kept in PostgreSQL (the first row stored wins when instances start together).
 */
export async function loadTokenSealKey(file: string | undefined, em: EntityManager): Promise<TokenSealKey> {
  if (file !== undefined) {
    let secret: Buffer;
    try {
      secret = await readFile(file);
    } catch {
      throw new ConfigError(`Invalid setting Protection:Organizations:TokenKeyFile: cannot read ${file}.`);
    }
    const trimmed = Buffer.from(secret.toString("latin1").trim(), "latin1");
    if (trimmed.length < 32) {
      throw new ConfigError("Invalid setting Protection:Organizations:TokenKeyFile: the secret must have at least 32 bytes.");
    }
    return tokenSealKey(trimmed);
  }
  await em
    .getConnection()
    .execute(`insert into "protection_organization_token_key" ("id", "secret", "created_at") values (1, ?, ?) on conflict do nothing`, [
      randomBytes(32),
      new Date(),
    ]);
  const stored = await em.fork().findOneOrFail(OrganizationTokenKeyEntity, { id: 1 });
  return tokenSealKey(Buffer.from(stored.secret));
}

export interface RedeemedOrganizationToken {
  organizationId: string;
  tokenId: string;
  tier: OrganizationTokenTier;
  /** Uses counted so far, this one included. */
  uses: number;
  maxUses: number;
}

/** Who redeemed the token, as far as the caller knows when it redeems: ids for the event. */
export interface Redeemer {
  accountId?: string;
  deviceId?: string;
  enrollmentId?: string;
}

/**
 * Counts one use of an organization token inside the caller's transaction and records
 * protection.v1.organization.token_redeemed. Unknown or revoked → 404 TOKEN_NOT_FOUND; every use
 * taken → 409 TOKEN_EXHAUSTED. One statement decides: concurrent redemptions never exceed
 * max_uses, and a transaction that rolls back (the registration failed after) gives its use back.
 */
export async function redeemOrganizationToken(tx: Transaction, token: string, redeemer: Redeemer = {}): Promise<RedeemedOrganizationToken> {
  if (!TOKEN_SHAPE.test(token)) throw tokenNotFound();
  const tokenHash = hashOrganizationToken(token);
  const conn = tx.em.getConnection();
  const ctx = tx.em.getTransactionContext();
  const won = await conn.execute<{ id: string; organization_id: string; tier: OrganizationTokenTier; uses: number; max_uses: number }[]>(
    `update "protection_organization_token" set "uses" = "uses" + 1
     where "token_hash" = ? and "revoked_at" is null and "uses" < "max_uses"
     returning "id", "organization_id", "tier", "uses", "max_uses"`,
    [tokenHash],
    "all",
    ctx,
  );
  const row = won[0];
  if (!row) {
    const found = await conn.execute<{ revoked_at: Date | null }[]>(
      `select "revoked_at" from "protection_organization_token" where "token_hash" = ?`,
      [tokenHash],
      "all",
      ctx,
    );
    if (!found[0] || found[0].revoked_at !== null) throw tokenNotFound();
    throw refusal(Code.Aborted, "TOKEN_EXHAUSTED", "This token has been used as many times as it allows.");
  }
  tx.record(OrganizationTokenRedeemedSchema, {
    organizationId: row.organization_id,
    tokenId: row.id,
    uses: row.uses,
    maxUses: row.max_uses,
    accountId: redeemer.accountId ?? "",
    deviceId: redeemer.deviceId ?? "",
    enrollmentId: redeemer.enrollmentId ?? "",
  });
  return { organizationId: row.organization_id, tokenId: row.id, tier: row.tier, uses: row.uses, maxUses: row.max_uses };
}
