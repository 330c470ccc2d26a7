// What devices are told of the blocklist: the version they should hold (in every heartbeat and
// registration answer) and the key that signs it (in their configuration).
import type { EntityManager } from "@mikro-orm/postgresql";
import { currentBlocklistVersion } from "../blocklist-versions.js";

export interface DeviceBlocklist {
  /** First 16 hex characters of SHA-256 of the raw public key. */
  readonly keyId: string;
  /** Base64 of the raw 32-byte Ed25519 public key. */
  readonly publicKey: string;
  /** The current version, 0 before the first; read from PostgreSQL at most once per `maxAgeMs`. */
  version(em: () => EntityManager): Promise<number>;
  /** The current version read now (inside a transaction that must see its own snapshot). */
  versionNow(em: EntityManager): Promise<number>;
}

/**
 * Heartbeats ask for the version on every call; every instance compiles on its own schedule, so
 * PostgreSQL is the one truth, asked at most once per `maxAgeMs` (1 s: a device heartbeats every
 * few minutes, and one more second before it hears of a new version changes nothing for it).
 */
export function deviceBlocklist(key: { keyId: string; publicKey: string }, maxAgeMs = 1_000): DeviceBlocklist {
  let cached: { value: number; at: number } | undefined;
  let pending: Promise<number> | undefined;
  return {
    keyId: key.keyId,
    publicKey: key.publicKey,
    version(em) {
      if (cached && Date.now() - cached.at < maxAgeMs) return Promise.resolve(cached.value);
      const startedAt = Date.now();
      pending ??= currentBlocklistVersion(em())
        .then((value) => {
          cached = { value, at: startedAt };
          return value;
        })
        .finally(() => {
          pending = undefined;
        });
      return pending;
    },
    versionNow: (em) => currentBlocklistVersion(em),
  };
}
