// Blocklist domains: one spelling per domain, so that entries, reports, versions and the signed
// answers agree byte for byte.
import { domainToASCII } from "node:url";

/** A refused domain: the service answers 400 VALIDATION_ERROR with this message, which names the field. */
export class DomainError extends Error {
  override name = "DomainError";
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`${field} ${problem}`);
  }
}

/** Longest DNS name in text form, without the trailing dot (RFC 1035's 255 octets on the wire). */
const maxDomainLength = 253;
const label = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** ASCII that may stand in a domain before IDNA; other ASCII ("/", "%", ":", "@", spaces…) the URL parser would cut or decode. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: controls are among the characters refused
const asciiOutsideHostname = /[\u0000-\u002c\u002f\u003a-\u0060\u007b-\u007f]/;

/**
 * The one spelling of a blocklist domain: lower-cased, a trailing dot dropped, IDNA to ASCII
 * (UTS #46 through `url.domainToASCII`), then checked as a hostname of two or more labels, each
 * 1–63 characters of a–z, 0–9 and hyphen, neither starting nor ending with a hyphen, 253
 * characters at most, the last label not all digits (an IPv4 address is no domain).
 * Anything else throws a DomainError naming `field`.
 */
export function normalizeDomain(input: string, field = "domain"): string {
  if (typeof input !== "string" || input === "") throw new DomainError(field, "must be a domain name such as example.com");
  if (input.length > 4 * maxDomainLength) throw new DomainError(field, `must be at most ${maxDomainLength} characters`);
  let text = input.toLowerCase();
  if (text.endsWith(".")) text = text.slice(0, -1);
  if (asciiOutsideHostname.test(text)) {
    throw new DomainError(field, "may hold only letters, digits, hyphens and dots (no scheme, path, port or spaces)");
  }
  const ascii = domainToASCII(text);
  if (ascii === "") throw new DomainError(field, "is not a valid internationalised domain name");
  if (ascii.length > maxDomainLength) throw new DomainError(field, `must be at most ${maxDomainLength} characters`);
  const labels = ascii.split(".");
  if (labels.length < 2) throw new DomainError(field, "must have at least two labels (such as example.com)");
  for (const part of labels) {
    if (part === "") throw new DomainError(field, "must not have an empty label");
    if (part.length > 63) throw new DomainError(field, "must not have a label longer than 63 characters");
    if (!label.test(part)) {
      throw new DomainError(field, "labels may hold only a-z, 0-9 and hyphens, and must not start or end with a hyphen");
    }
  }
  if (/^[0-9]+$/.test(labels[labels.length - 1]!)) throw new DomainError(field, "must be a domain name, not an IP address");
  return ascii;
}
