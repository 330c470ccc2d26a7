// The closed vocabularies of the blocklist's administration and the paging every admin list
// shares, as pure checks: a refusal names its field.
import { DomainError, normalizeDomain } from "../blocklist/index.js";

export const entryReasons = ["manual", "agent_report", "federated_report", "import"] as const;
export const categories = [
  "online_casino",
  "sports_betting",
  "poker",
  "lottery",
  "bingo",
  "fantasy_sports",
  "crypto_gambling",
  "affiliate",
  "payment_processor",
  "other",
] as const;
export const reportReasons = ["user_report", "heuristic", "other"] as const;
export const reviewStatuses = ["pending", "deferred", "approved", "rejected"] as const;
export const platforms = ["windows", "macos", "linux", "android", "ios"] as const;
export const identifierTypes = ["package_name", "bundle_id", "executable_name", "cert_sha256"] as const;

export type Checked<T> = { ok: true; value: T } | { ok: false; field: string; message: string };

const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
const refused = (field: string, message: string): Checked<never> => ({ ok: false, field, message });

/** One of `values` (exact spelling), else a refusal listing them. */
export function checkOneOf<const V extends readonly string[]>(field: string, value: string, values: V): Checked<V[number]> {
  return (values as readonly string[]).includes(value)
    ? ok(value as V[number])
    : refused(field, `${field} must be one of ${values.join(", ")}`);
}

export function checkDomain(value: string, field = "domain"): Checked<string> {
  try {
    return ok(normalizeDomain(value, field));
  } catch (err) {
    if (err instanceof DomainError) return refused(err.field, err.message);
    throw err;
  }
}

/** Free text up to `max` characters; blank reads as absent. */
export function checkText(field: string, value: string | undefined, max: number): Checked<string | null> {
  if (value === undefined) return ok(null);
  const text = value.trim();
  if (text.length > max) return refused(field, `${field} must be at most ${max} characters`);
  return ok(text === "" ? null : text);
}

/** A required short text: 1..max characters after trimming, no control characters. */
export function checkName(field: string, value: string, max: number): Checked<string> {
  const text = value.trim();
  if (text === "" || text.length > max) return refused(field, `${field} must be 1 to ${max} characters`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(text)) return refused(field, `${field} must not hold control characters`);
  return ok(text);
}

/** An app identifier: a cert_sha256 is 64 hex characters (lower-cased), others 1..255 characters. */
export function checkIdentifier(type: string, value: string): Checked<string> {
  if (type === "cert_sha256") {
    const hex = value.trim().toLowerCase();
    return /^[0-9a-f]{64}$/.test(hex) ? ok(hex) : refused("identifier", "identifier of a cert_sha256 must be 64 hex characters");
  }
  return checkName("identifier", value, 255);
}

export interface PageRequest {
  page: number;
  perPage: number;
  offset: number;
}

/** page (default 1, at least 1) and per_page (default 50, clamped to 1..200). */
export function checkPage(input: { page?: number; perPage?: number }): Checked<PageRequest> {
  const page = input.page ?? 1;
  if (page < 1) return refused("page", "page must be 1 or more");
  const perPage = Math.min(200, Math.max(1, input.perPage ?? 50));
  return ok({ page, perPage, offset: (page - 1) * perPage });
}
