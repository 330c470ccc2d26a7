// The configured API keys, held only as SHA-256 digests: the clear keys are not kept once the
// store is built, and a presented key is compared against every digest in constant time.
import { createHash, timingSafeEqual } from "node:crypto";
import { ConfigError } from "../config/index.js";

export interface ApiKeyIdentity {
  readonly name: string;
  readonly role: string;
}

export interface ApiKeyStore {
  /** How many keys are configured; 0 means the API is open. */
  readonly size: number;
  /** The identity a presented key stands for, or undefined when no configured key matches. */
  lookup(presented: string): ApiKeyIdentity | undefined;
}

interface StoredKey extends ApiKeyIdentity {
  readonly digest: Buffer;
}

function digestOf(key: string): Buffer {
  return createHash("sha256").update(key, "utf8").digest();
}

export function createApiKeyStore(keys: readonly { name: string; role: string; key: string }[], setting = "Auth:ApiKeys"): ApiKeyStore {
  const stored: StoredKey[] = [];
  for (const [index, { name, role, key }] of keys.entries()) {
    const digest = digestOf(key);
    const twin = stored.findIndex((s) => timingSafeEqual(s.digest, digest));
    // Two entries with one key would make the caller's identity depend on the list order.
    if (twin >= 0) throw new ConfigError(`Invalid setting ${setting}: items ${twin} and ${index} have the same Key.`);
    stored.push({ name, role, digest });
  }

  return {
    size: stored.length,
    lookup(presented) {
      // Digests have a fixed length, so timingSafeEqual applies whatever the presented length;
      // every stored key is compared, so the time says nothing about which one matched.
      const digest = digestOf(presented);
      let found: StoredKey | undefined;
      for (const entry of stored) {
        if (timingSafeEqual(entry.digest, digest) && found === undefined) found = entry;
      }
      return found && { name: found.name, role: found.role };
    },
  };
}
