// Small input checks shared by every service's handlers.
import { invalidArgument } from "./field-errors.js";

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return uuidPattern.test(value);
}

/** The value as a lower-case uuid, or InvalidArgument naming the field. */
export function requireUuid(field: string, value: string | undefined): string {
  if (value === undefined || value === "") throw invalidArgument([{ field, description: "is required" }]);
  if (!isUuid(value)) throw invalidArgument([{ field, description: `'${truncate(value)}' is not a valid uuid` }]);
  return value.toLowerCase();
}

/** Shortens client-supplied text before echoing it in an error message. */
export function truncate(value: string, max = 64): string {
  return value.length > max ? `${value.slice(0, max)}…` : value;
}
