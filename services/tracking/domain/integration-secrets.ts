// Secrets in a feed's configuration JSON: which keys look secret, masking them for every answer
// and event, and putting stored secrets back where an update sends the mask. Pure functions.

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** What a secret value is replaced by. Under a secret key it also means "keep the stored one". */
export const maskedValue = "***";

// Matched anywhere in the key with separators removed: no ordinary key contains these.
const secretFragments = ["password", "passwd", "passphrase", "secret", "token", "apikey", "credential", "privatekey", "authorization"];
// Matched only as whole words: as substrings they would hit "monkey", "author" or "keyboard".
const secretWords = new Set(["key", "keys", "auth", "pwd", "private", "bearer", "cookie", "signature"]);

/** The words of a key: split at camelCase humps, digits-to-capitals and any non-alphanumeric. */
function wordsOf(key: string): string[] {
  return key
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/** Whether values under this key are masked (case-insensitive; see IntegrationFeed in the contract). */
export function isSecretKey(key: string): boolean {
  const compact = key.toLowerCase().replace(/[^a-z0-9]/g, "");
  return secretFragments.some((f) => compact.includes(f)) || wordsOf(key).some((w) => secretWords.has(w));
}

function isObject(value: JsonValue | undefined): value is { [key: string]: JsonValue } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The value with every non-null scalar at or under a secret key replaced by the mask. Objects are
 * rebuilt with Object.fromEntries, so a "__proto__" key stays an ordinary property.
 */
export function maskSecrets(value: JsonValue, underSecret = false): JsonValue {
  if (Array.isArray(value)) return value.map((v) => maskSecrets(v, underSecret));
  if (isObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, maskSecrets(v, underSecret || isSecretKey(k))]));
  }
  return underSecret && value !== null ? maskedValue : value;
}

/**
 * Stored configuration text as answers and events show it. Stored text is always valid JSON (the
 * service writes it); anything else is hidden whole rather than risk showing a secret.
 */
export function maskConfigurationText(text: string | null): string | null {
  if (text === null) return null;
  let parsed: JsonValue;
  try {
    parsed = JSON.parse(text) as JsonValue;
  } catch {
    return JSON.stringify(maskedValue);
  }
  return JSON.stringify(maskSecrets(parsed));
}

/** Whether the value nests arrays and objects deeper than `limit` levels (stops looking there). */
export function nestsDeeperThan(value: JsonValue, limit: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (limit <= 0) return true;
  const children = Array.isArray(value) ? value : Object.values(value);
  return children.some((child) => nestsDeeperThan(child, limit - 1));
}

export interface KeptSecrets {
  value: JsonValue;
  /** Paths where the mask was sent under a secret key but nothing is stored there. */
  unmatched: string[];
}

/**
 * Puts the stored secret back wherever `incoming` carries the mask under a secret key, at the same
 * path (object keys and array positions). The mask elsewhere is an ordinary string. `stored` is
 * undefined when nothing is stored (a create), so every mask under a secret key is unmatched.
 */
export function keepStoredSecrets(incoming: JsonValue, stored: JsonValue | undefined): KeptSecrets {
  const unmatched: string[] = [];
  const walk = (value: JsonValue, before: JsonValue | undefined, underSecret: boolean, path: string): JsonValue => {
    if (Array.isArray(value)) {
      return value.map((v, i) => walk(v, Array.isArray(before) ? before[i] : undefined, underSecret, `${path}[${i}]`));
    }
    if (isObject(value)) {
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => {
          const old = isObject(before) && Object.hasOwn(before, k) ? before[k] : undefined;
          return [k, walk(v, old, underSecret || isSecretKey(k), path ? `${path}.${k}` : k)];
        }),
      );
    }
    if (underSecret && value === maskedValue) {
      if (before !== undefined) return before;
      unmatched.push(path);
    }
    return value;
  };
  return { value: walk(incoming, stored, false, ""), unmatched };
}
