// Links between accounts: accountability partners (an invitation bound to an address, accepted by
// the account that holds it) and organizations with their members (owners, admins and members;
// an address without an account is an invited member until it registers).
import { Migration } from "@mikro-orm/migrations";

export class ProtectionRelations0003 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "protection_partner" (
      "id" uuid primary key,
      "inviter_account_id" uuid not null references "protection_account" ("id") on delete cascade,
      "invitee_email" text not null,
      "invitee_account_id" uuid null references "protection_account" ("id") on delete cascade,
      "status" text not null check ("status" in ('pending', 'accepted')),
      "created_at" timestamptz not null,
      "accepted_at" timestamptz null
    )`);
    this.addSql(`create unique index "protection_partner_invite_uq" on "protection_partner" ("inviter_account_id", "invitee_email")`);
    this.addSql(`create index "protection_partner_invitee_idx" on "protection_partner" ("invitee_account_id")`);
    this.addSql(`create index "protection_partner_email_idx" on "protection_partner" ("invitee_email")`);
    this.addSql(`create table "protection_organization" (
      "id" uuid primary key,
      "name" text not null,
      "description" text null,
      "created_at" timestamptz not null,
      "updated_at" timestamptz not null
    )`);
    this.addSql(`create table "protection_organization_member" (
      "id" uuid primary key,
      "organization_id" uuid not null references "protection_organization" ("id") on delete cascade,
      "account_id" uuid null references "protection_account" ("id") on delete cascade,
      "email" text not null,
      "role" text not null check ("role" in ('owner', 'admin', 'member')),
      "status" text not null check ("status" in ('active', 'invited')),
      "created_at" timestamptz not null
    )`);
    this.addSql(
      `create unique index "protection_organization_member_email_uq" on "protection_organization_member" ("organization_id", "email")`,
    );
    this.addSql(`create index "protection_organization_member_account_idx" on "protection_organization_member" ("account_id")`);
    this.addSql(
      `create index "protection_organization_member_pending_idx" on "protection_organization_member" ("email") where "status" = 'invited'`,
    );
  }
}
