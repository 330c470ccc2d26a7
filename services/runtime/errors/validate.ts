// Small input checks shared by every service's handlers.
import { invalidArgument } from "./field-errors.js";
import { isUuid, truncate } from "./field-violation.js";

export { isUuid, truncate };

/** The value as a lower-case uuid, or InvalidArgument naming the field. */
export function requireUuid(field: string, value: string | undefined): string {
  if (value === undefined || value === "") throw invalidArgument([{ field, description: "is required" }]);
  if (!isUuid(value)) throw invalidArgument([{ field, description: `'${truncate(value)}' is not a valid uuid` }]);
  return value.toLowerCase();
}
