// RFC 8785 JSON Canonicalization Scheme: the one byte sequence of a JSON value that signer and
// verifier both rebuild. Object keys sorted by UTF-16 code units, no whitespace, numbers written
// as ECMAScript writes them, strings escaped only where JSON must.

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A value JCS cannot write: a non-finite number, a lone surrogate, undefined, or a non-JSON object. */
export class CanonicalJsonError extends TypeError {
  override name = "CanonicalJsonError";
}

/** The JCS text of `value`; UTF-8 encode it for the bytes to sign. */
export function canonicalJson(value: JsonValue): string {
  const out: string[] = [];
  write(value, out, []);
  return out.join("");
}

/** The UTF-8 bytes of the JCS text of `value`. */
export function canonicalJsonBytes(value: JsonValue): Buffer {
  return Buffer.from(canonicalJson(value), "utf8");
}

/** Where the writer is, kept as a stack so that a path is only spelled out for an error. */
type Path = (string | number)[];

function spell(path: Path): string {
  return `$${path.map((part) => (typeof part === "number" ? `[${part}]` : `.${part}`)).join("")}`;
}

function write(value: unknown, out: string[], path: Path): void {
  switch (typeof value) {
    case "string":
      out.push(quote(value, path));
      return;
    case "number":
      out.push(number(value, path));
      return;
    case "boolean":
      out.push(value ? "true" : "false");
      return;
    case "object":
      if (value === null) {
        out.push("null");
        return;
      }
      if (Array.isArray(value)) {
        if (isPlainStringArray(value)) {
          // The blocklist's shape (a million domains): no string needs escaping, so one join writes them all.
          out.push(value.length === 0 ? "[]" : `["${value.join('","')}"]`);
          return;
        }
        out.push("[");
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out.push(",");
          path.push(i);
          write(value[i], out, path);
          path.pop();
        }
        out.push("]");
        return;
      }
      if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) {
        throw new CanonicalJsonError(`${spell(path)} is not a plain JSON object`);
      }
      writeObject(value as Record<string, unknown>, out, path);
      return;
    default:
      throw new CanonicalJsonError(`${spell(path)} is ${typeof value}, which JSON cannot hold`);
  }
}

function writeObject(object: Record<string, unknown>, out: string[], path: Path): void {
  // The default sort compares strings by UTF-16 code units, which is what RFC 8785 §3.2.3 asks.
  const keys = Object.keys(object).sort();
  out.push("{");
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (i > 0) out.push(",");
    out.push(quote(key, path), ":");
    path.push(key);
    write(object[key], out, path);
    path.pop();
  }
  out.push("}");
}

/**
 * RFC 8785 §3.2.2.3: the ECMAScript Number-to-String of a finite number (shortest round-trip
 * digits, exponent from 1e21 and below 1e-6, -0 as 0). V8's Number::toString is that algorithm.
 */
function number(value: number, path: Path): string {
  if (!Number.isFinite(value)) throw new CanonicalJsonError(`${spell(path)} is ${value}, which JSON cannot hold`);
  return Object.is(value, -0) ? "0" : String(value);
}

/** Characters a JCS string must escape: `"`, `\`, controls, and surrogates (checked for pairing). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: JCS escapes exactly these controls
const needsWork = /["\\\u0000-\u001f\ud800-\udfff]/;
const shortEscapes: Readonly<Record<number, string>> = { 8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r", 34: '\\"', 92: "\\\\" };

function isPlainStringArray(values: unknown[]): values is string[] {
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (typeof value !== "string" || needsWork.test(value)) return false;
  }
  return true;
}

/** RFC 8785 §3.2.2.2: `"` and `\` escaped, controls as \b \t \n \f \r or \u00xx (lower-case hex), all else as is. */
function quote(text: string, path: Path): string {
  if (!needsWork.test(text)) return `"${text}"`;
  let result = '"';
  let runStart = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdfff) {
      const next = text.charCodeAt(i + 1);
      if (code > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) {
        throw new CanonicalJsonError(`${spell(path)} holds a lone surrogate, which I-JSON (and so JCS) refuses`);
      }
      i++;
      continue;
    }
    if (code >= 0x20 && code !== 0x22 && code !== 0x5c) continue;
    result += text.slice(runStart, i) + (shortEscapes[code] ?? `\\u${code.toString(16).padStart(4, "0")}`);
    runStart = i + 1;
  }
  return `${result + text.slice(runStart)}"`;
}
