// What organizations, members and their bulk enrollment tokens must be, and who may do what to
// whom: pure checks, each answering the refusal (naming the field) or the normalised value.
import type { OrganizationRole } from "../store/relations.js";
import { organizationRoles } from "../store/relations.js";
import { type OrganizationTokenTier, organizationTokenTiers } from "../store/organization-tokens.js";
import type { Checked } from "./account-rules.js";

const fail = (field: string, message: string): { ok: false; field: string; message: string } => ({ ok: false, field, message });

export const DESCRIPTION_MAX = 1000;
export const MAX_USES_LIMIT = 100_000;

// Control characters would break a mail subject or a listing; tabs and newlines included.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
const CONTROL = /[\u0000-\u001f\u007f]/;

/** A one-line text of 1..max characters after trimming (names, labels). */
function checkLine(field: string, raw: string, max: number): Checked<string> {
  const value = raw.trim();
  const length = [...value].length;
  if (length < 1 || length > max) return fail(field, `${field} must have 1 to ${max} characters`);
  if (CONTROL.test(value)) return fail(field, `${field} must not contain control characters`);
  return { ok: true, value };
}

export const checkOrganizationName = (raw: string): Checked<string> => checkLine("name", raw, 100);

export const checkTokenLabel = (raw: string): Checked<string> => checkLine("label", raw, 100);

/** Up to DESCRIPTION_MAX characters after trimming; an empty one is none (null). */
export function checkDescription(raw: string | undefined): Checked<string | null> {
  const value = (raw ?? "").trim();
  if ([...value].length > DESCRIPTION_MAX) return fail("description", `description must have at most ${DESCRIPTION_MAX} characters`);
  return { ok: true, value: value === "" ? null : value };
}

export function checkOrganizationRole(raw: string): Checked<OrganizationRole> {
  const role = organizationRoles.find((r) => r === raw);
  return role ? { ok: true, value: role } : fail("role", `role must be one of ${organizationRoles.join(", ")}`);
}

export function checkTier(raw: string): Checked<OrganizationTokenTier> {
  const tier = organizationTokenTiers.find((t) => t === raw);
  return tier ? { ok: true, value: tier } : fail("tier", `tier must be one of ${organizationTokenTiers.join(", ")}`);
}

export function checkMaxUses(value: number): Checked<number> {
  if (!Number.isInteger(value) || value < 1 || value > MAX_USES_LIMIT) return fail("max_uses", `max_uses must be 1 to ${MAX_USES_LIMIT}`);
  return { ok: true, value };
}

const rank: Record<OrganizationRole, number> = { owner: 3, admin: 2, member: 1 };

/** Whether `actor` may give `role`: at most one's own. */
export function mayGrant(actor: OrganizationRole, role: OrganizationRole): boolean {
  return rank[role] <= rank[actor];
}

/** Whether `actor` may change or remove a member holding `target`: owners anyone, others only lower ranks. */
export function mayManage(actor: OrganizationRole, target: OrganizationRole): boolean {
  return actor === "owner" || rank[actor] > rank[target];
}
