// The protection_* tables of accounts and tokens as MikroORM sees them.
import { EntitySchema } from "@mikro-orm/core";

export interface AccountRow {
  id: string;
  /** Trimmed and lower-cased; unique. */
  email: string;
  displayName: string;
  /** argon2id, in the PHC string form libsodium writes. */
  passwordHash: string;
  role: string;
  createdAt: Date;
  updatedAt: Date;
}

export const AccountEntity = new EntitySchema<AccountRow>({
  name: "ProtectionAccount",
  tableName: "protection_account",
  properties: {
    id: { type: "uuid", primary: true },
    email: { type: "text", unique: true },
    displayName: { type: "text" },
    passwordHash: { type: "text" },
    role: { type: "text" },
    createdAt: { type: "Date", columnType: "timestamptz" },
    updatedAt: { type: "Date", columnType: "timestamptz" },
  },
});

/** One refresh token; a family is one login and its rotations. */
export interface RefreshTokenRow {
  /** Hex SHA-256 of the token. */
  tokenHash: string;
  familyId: string;
  accountId: string;
  expiresAt: Date;
  /** Set when it was exchanged for a new pair: presenting it again is reuse. */
  usedAt: Date | null;
  createdAt: Date;
}

export const RefreshTokenEntity = new EntitySchema<RefreshTokenRow>({
  name: "ProtectionRefreshToken",
  tableName: "protection_refresh_token",
  properties: {
    tokenHash: { type: "text", primary: true },
    familyId: { type: "uuid" },
    accountId: { type: "uuid" },
    expiresAt: { type: "Date", columnType: "timestamptz" },
    usedAt: { type: "Date", columnType: "timestamptz", nullable: true },
    createdAt: { type: "Date", columnType: "timestamptz" },
  },
});

/** A revoked family, kept while its access tokens may still be presented. */
export interface RevokedFamilyRow {
  familyId: string;
  accountId: string;
  reason: string;
  /** After this, every access token of the family has expired: the row can go. */
  accessExpiresAt: Date;
  revokedAt: Date;
}

export const RevokedFamilyEntity = new EntitySchema<RevokedFamilyRow>({
  name: "ProtectionRevokedFamily",
  tableName: "protection_revoked_family",
  properties: {
    familyId: { type: "uuid", primary: true },
    accountId: { type: "uuid" },
    reason: { type: "text" },
    accessExpiresAt: { type: "Date", columnType: "timestamptz" },
    revokedAt: { type: "Date", columnType: "timestamptz" },
  },
});

/** The token signing key generated on first start, when no key file is configured. */
export interface SigningKeyRow {
  kid: string;
  /** PKCS#8 PEM. */
  privateKeyPem: string;
  createdAt: Date;
}

export const SigningKeyEntity = new EntitySchema<SigningKeyRow>({
  name: "ProtectionSigningKey",
  tableName: "protection_signing_key",
  properties: {
    kid: { type: "text", primary: true },
    privateKeyPem: { type: "text" },
    createdAt: { type: "Date", columnType: "timestamptz" },
  },
});

/** A login lock of one e-mail (by its SHA-256), after too many failures. */
export interface LoginLockRow {
  emailHash: string;
  lockedUntil: Date;
}

export const LoginLockEntity = new EntitySchema<LoginLockRow>({
  name: "ProtectionLoginLock",
  tableName: "protection_login_lock",
  properties: {
    emailHash: { type: "text", primary: true },
    lockedUntil: { type: "Date", columnType: "timestamptz" },
  },
});
