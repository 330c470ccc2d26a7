// The protection_partner and protection_organization* tables as MikroORM sees them (migration
// 0003-relations).
import { EntitySchema } from "@mikro-orm/core";

export type PartnerStatus = "pending" | "accepted";

/** One partner link: an invitation from an account to an address, accepted by the account holding it. */
export interface PartnerRow {
  id: string;
  inviterAccountId: string;
  /** The invited address, trimmed and lower-cased. */
  inviteeEmail: string;
  /** The account holding inviteeEmail, once one does (at invitation or at its registration). */
  inviteeAccountId: string | null;
  status: PartnerStatus;
  createdAt: Date;
  acceptedAt: Date | null;
  /** The inviter lets the invitee read the events of the inviter's devices. */
  inviterDetailedAccess: boolean;
  /** The invitee lets the inviter read the events of the invitee's devices. */
  inviteeDetailedAccess: boolean;
}

const timestamptz = { type: "Date", columnType: "timestamptz" } as const;

export const PartnerEntity = new EntitySchema<PartnerRow>({
  name: "ProtectionPartner",
  tableName: "protection_partner",
  properties: {
    id: { type: "uuid", primary: true },
    inviterAccountId: { type: "uuid" },
    inviteeEmail: { type: "text" },
    inviteeAccountId: { type: "uuid", nullable: true },
    status: { type: "text" },
    createdAt: { ...timestamptz },
    acceptedAt: { ...timestamptz, nullable: true },
    inviterDetailedAccess: { type: "boolean", default: false },
    inviteeDetailedAccess: { type: "boolean", default: false },
  },
});

export interface OrganizationRow {
  id: string;
  name: string;
  description: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export const OrganizationEntity = new EntitySchema<OrganizationRow>({
  name: "ProtectionOrganization",
  tableName: "protection_organization",
  properties: {
    id: { type: "uuid", primary: true },
    name: { type: "text" },
    description: { type: "text", nullable: true },
    createdAt: { ...timestamptz },
    updatedAt: { ...timestamptz },
  },
});

/** Organization roles, highest first: an owner outranks an admin, who outranks a member. */
export const organizationRoles = ["owner", "admin", "member"] as const;
export type OrganizationRole = (typeof organizationRoles)[number];

export interface OrganizationMemberRow {
  id: string;
  organizationId: string;
  /** Null while the address has no account (status invited). */
  accountId: string | null;
  /** The address invited, trimmed and lower-cased. */
  email: string;
  role: OrganizationRole;
  status: "active" | "invited";
  createdAt: Date;
}

export const OrganizationMemberEntity = new EntitySchema<OrganizationMemberRow>({
  name: "ProtectionOrganizationMember",
  tableName: "protection_organization_member",
  properties: {
    id: { type: "uuid", primary: true },
    organizationId: { type: "uuid" },
    accountId: { type: "uuid", nullable: true },
    email: { type: "text" },
    role: { type: "text" },
    status: { type: "text" },
    createdAt: { ...timestamptz },
  },
});
