// The protection_organization_token and protection_organization_token_key tables as MikroORM sees
// them (migration 0005-organization-tokens).
import { EntitySchema } from "@mikro-orm/core";

export const organizationTokenTiers = ["self", "partner", "authority"] as const;
export type OrganizationTokenTier = (typeof organizationTokenTiers)[number];

/** A bulk enrollment token of an organization: redeemed by its SHA-256, rendered as a QR from its sealed copy. */
export interface OrganizationTokenRow {
  id: string;
  organizationId: string;
  label: string;
  tier: OrganizationTokenTier;
  /** SHA-256 of the token, hex: what a redemption looks up. */
  tokenHash: string;
  /** The token under AES-256-GCM (nonce, ciphertext, tag), for its QR code only. */
  tokenSealed: Buffer;
  maxUses: number;
  uses: number;
  /** Null once the account that created it is gone. */
  createdBy: string | null;
  createdAt: Date;
  revokedAt: Date | null;
}

const timestamptz = { type: "Date", columnType: "timestamptz" } as const;

export const OrganizationTokenEntity = new EntitySchema<OrganizationTokenRow>({
  name: "ProtectionOrganizationToken",
  tableName: "protection_organization_token",
  properties: {
    id: { type: "uuid", primary: true },
    organizationId: { type: "uuid" },
    label: { type: "text" },
    tier: { type: "text" },
    tokenHash: { type: "text" },
    tokenSealed: { type: "Buffer", columnType: "bytea" },
    maxUses: { type: "integer" },
    uses: { type: "integer" },
    createdBy: { type: "uuid", nullable: true },
    createdAt: { ...timestamptz },
    revokedAt: { ...timestamptz, nullable: true },
  },
});

/** The generated key that seals organization tokens when no Protection:Organizations:TokenKeyFile is set. */
export interface OrganizationTokenKeyRow {
  id: number;
  secret: Buffer;
  createdAt: Date;
}

export const OrganizationTokenKeyEntity = new EntitySchema<OrganizationTokenKeyRow>({
  name: "ProtectionOrganizationTokenKey",
  tableName: "protection_organization_token_key",
  properties: {
    id: { type: "smallint", primary: true },
    secret: { type: "Buffer", columnType: "bytea" },
    createdAt: { ...timestamptz },
  },
});
