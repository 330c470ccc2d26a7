// X-Request-Id: the caller's when it is sane, so logs line up across hops; a fresh uuid otherwise.
import { randomUUID } from "node:crypto";

// Visible ASCII only, so the id can go into headers and logs as it is.
const SANE = /^[\x21-\x7e]{1,128}$/;

export function requestIdOf(header: string | string[] | undefined): string {
  return typeof header === "string" && SANE.test(header) ? header : randomUUID();
}
