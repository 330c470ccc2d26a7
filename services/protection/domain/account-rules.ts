// What an e-mail, a display name and a password must be: pure checks, each answering the message
// of a refusal (naming the field) or the normalised value.
import { commonPasswords } from "./common-passwords.js";

export type Checked<T> = { ok: true; value: T } | { ok: false; field: string; message: string };

const fail = (field: string, message: string): { ok: false; field: string; message: string } => ({ ok: false, field, message });

// Syntax only: something@something.tld, no spaces, at most 254 characters (RFC 5321's path limit).
const EMAIL = /^[^\s@]{1,64}@[^\s@.]+(\.[^\s@.]+)+$/;

export function checkEmail(raw: string): Checked<string> {
  const email = raw.trim().toLowerCase();
  if (email.length > 254 || !EMAIL.test(email)) return fail("email", "email must be an e-mail address");
  return { ok: true, value: email };
}

export function checkDisplayName(raw: string): Checked<string> {
  const name = raw.trim();
  const length = [...name].length;
  if (length < 1 || length > 100) return fail("display_name", "display_name must have 1 to 100 characters");
  return { ok: true, value: name };
}

/** The password rules: 12..128 characters, nothing guessable from the account, not a common one. */
export function checkPassword(password: string, account: { email: string; displayName: string }): Checked<string> {
  const chars = [...password];
  if (chars.length < 12 || chars.length > 128) return fail("password", "password must have 12 to 128 characters");
  const lower = password.toLowerCase();
  const localPart = account.email.split("@")[0] ?? "";
  const guessable = [account.email, localPart, account.displayName.toLowerCase()];
  if (guessable.some((g) => g !== "" && lower === g))
    return fail("password", "password must not be the e-mail address or the display name");
  if (new Set(chars).size === 1) return fail("password", "password must not be one repeated character");
  if (commonPasswords.has(lower)) return fail("password", "password is too common");
  return { ok: true, value: password };
}
