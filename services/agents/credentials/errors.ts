// What can go wrong in the credential store. No message ever carries a credential's value, its
// name, the Vault token or a key: only what failed, where (Vault's origin, a file's hash) and why.
import { createHash } from "node:crypto";

/** Any failure of the credential store. */
export class CredentialError extends Error {
  override name = "CredentialError";
}

/** A name or value the store does not accept (the command's usage error). */
export class CredentialInputError extends CredentialError {
  override name = "CredentialInputError";
}

/** Vault could not be reached, timed out, refused the token or answered something unexpected. */
export class VaultError extends CredentialError {
  override name = "VaultError";
  constructor(
    message: string,
    /** Vault's HTTP status; undefined when it could not be reached or did not answer in time. */
    readonly status?: number,
  ) {
    super(message);
  }
}

/** The encrypted files: a damaged keyring or entry, an unknown key id, a lock held too long. */
export class LocalStoreError extends CredentialError {
  override name = "LocalStoreError";
}

/** The read-only mounted directory (APP_CREDENTIALS_MOUNT_PATH) is missing or unreadable. */
export class MountedCredentialsError extends CredentialError {
  override name = "MountedCredentialsError";
}

/**
 * Credential names: 1 to 128 characters of letters, digits, `.`, `_` and `-`, starting with a
 * letter or a digit (`provider.openai`, `mcp.github`). The same name is a file name in the mounted
 * directory (a Kubernetes secret key has this alphabet) and one path segment in Vault, so neither
 * `/` nor `..` can reach outside either.
 */
export const CREDENTIAL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Largest value accepted, in UTF-8 bytes. */
export const MAX_VALUE_BYTES = 1024 * 1024;

export function checkName(name: string): void {
  if (typeof name !== "string" || !CREDENTIAL_NAME.test(name)) {
    throw new CredentialInputError(
      "invalid credential name: use 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or a digit",
    );
  }
}

export function checkValue(value: string): void {
  if (typeof value !== "string" || value === "") throw new CredentialInputError("the credential value is empty");
  if (Buffer.byteLength(value, "utf8") > MAX_VALUE_BYTES) {
    throw new CredentialInputError(`the credential value is larger than ${MAX_VALUE_BYTES} bytes`);
  }
}

/** The SHA-256 of the name's UTF-8 bytes, lowercase hex: the entry's file name and the audit's keyHash. */
export function nameHash(name: string): string {
  return createHash("sha256").update(name, "utf8").digest("hex");
}
