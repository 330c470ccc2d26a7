// A strict application/x-www-form-urlencoded query parser: malformed escapes are the client's
// mistake and must surface as a 400, which URLSearchParams would silently hide.
import { badRequest } from "../errors/http-error.js";

export type QueryPair = readonly [name: string, value: string];

export function parseQuery(raw: string): QueryPair[] {
  const pairs: QueryPair[] = [];
  if (raw === "") return pairs;
  for (const part of raw.split("&")) {
    if (part === "") continue;
    const eq = part.indexOf("=");
    const name = decodeComponent(eq < 0 ? part : part.slice(0, eq), part);
    const value = eq < 0 ? "" : decodeComponent(part.slice(eq + 1), name);
    pairs.push([name, value]);
  }
  return pairs;
}

function decodeComponent(s: string, label: string): string {
  if (!s.includes("%") && !s.includes("+")) return s;
  try {
    return decodeURIComponent(s.replaceAll("+", " "));
  } catch {
    throw badRequest(`query parameter "${label}" is not valid percent-encoding`, label, "invalid percent-encoding");
  }
}
