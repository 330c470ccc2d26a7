// The blocklist entries and app signatures as MikroORM sees them (versions, domains, reports and
// review items are read and written with SQL in blocklist-versions.ts and review-queue.ts).
import { EntitySchema } from "@mikro-orm/core";

export interface BlocklistEntryRow {
  id: string;
  /** Normalised (normalizeDomain); unique. */
  domain: string;
  reason: string;
  category: string;
  notes: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export const BlocklistEntryEntity = new EntitySchema<BlocklistEntryRow>({
  name: "ProtectionBlocklistEntry",
  tableName: "protection_blocklist_entry",
  properties: {
    id: { type: "uuid", primary: true },
    domain: { type: "text", unique: true },
    reason: { type: "text" },
    category: { type: "text" },
    notes: { type: "text", nullable: true },
    createdAt: { type: "Date", columnType: "timestamptz" },
    updatedAt: { type: "Date", columnType: "timestamptz" },
  },
});

export interface AppSignatureRow {
  id: string;
  platform: string;
  identifier: string;
  identifierType: string;
  displayName: string;
  category: string;
  createdAt: Date;
  updatedAt: Date;
}

export const AppSignatureEntity = new EntitySchema<AppSignatureRow>({
  name: "ProtectionAppSignature",
  tableName: "protection_app_signature",
  properties: {
    id: { type: "uuid", primary: true },
    platform: { type: "text" },
    identifier: { type: "text" },
    identifierType: { type: "text" },
    displayName: { type: "text" },
    category: { type: "text" },
    createdAt: { type: "Date", columnType: "timestamptz" },
    updatedAt: { type: "Date", columnType: "timestamptz" },
  },
});
