// The agent gateway's credential store (README.md next to this file): Vault KV v2, the encrypted
// files under `<DataDir>/credentials`, a read-only mounted directory, and the access audit log.
export { runCredentialsCommand, credentialsUsage, loadDataDir, expandDataDir, DATA_DIR_SETTING } from "./command.js";
export {
  CREDENTIAL_NAME,
  CredentialError,
  CredentialInputError,
  LocalStoreError,
  MAX_VALUE_BYTES,
  MountedCredentialsError,
  nameHash,
  VaultError,
} from "./errors.js";
export type { EntryFile, Keyring, KeyringKey } from "./local-files.js";
export {
  AUDIT_LOG,
  CREDENTIALS_DIR,
  type CredentialAuditRecord,
  type CredentialBackend,
  type CredentialOperation,
  CredentialStore,
  type CredentialStoreOptions,
  credentialBackendsFromEnv,
} from "./store.js";
export type { VaultOptions } from "./vault.js";
