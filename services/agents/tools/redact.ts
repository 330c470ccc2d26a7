// Redaction of tool arguments for the audit and approval items, at any depth: the value under
// content, code, script, input, body, text, thought, oldStr, newStr, oldText, newText, editsJson,
// env or key, and under any key containing password, secret, token, credential, apikey or
// authorization, reads `[REDACTED]`.
const EXACT = new Set(
  [
    "content",
    "code",
    "script",
    "input",
    "body",
    "text",
    "thought",
    "oldStr",
    "newStr",
    "oldText",
    "newText",
    "editsJson",
    "env",
    "key",
  ].map((k) => k.toLowerCase()),
);
const CONTAINED = ["password", "secret", "token", "credential", "apikey", "authorization"];

export const REDACTED = "[REDACTED]";

export function isRedactedKey(key: string): boolean {
  const lower = key.toLowerCase();
  return EXACT.has(lower) || CONTAINED.some((part) => lower.includes(part));
}

export function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, isRedactedKey(k) ? REDACTED : redact(v)]));
}

/** Arguments as called (JSON text or an object), redacted; text that is not JSON is kept only as its length. */
export function redactArguments(raw: string | Record<string, unknown> | undefined): unknown {
  if (raw === undefined) return {};
  if (typeof raw !== "string") return redact(raw);
  if (raw.trim() === "") return {};
  try {
    return redact(JSON.parse(raw));
  } catch {
    return { unparsed: true, length: raw.length };
  }
}
