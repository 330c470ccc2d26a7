// Describing bad input without any transport: domain rules report field violations with these,
// and handlers turn them into ConnectErrors (field-errors.ts) at the edge.

export interface FieldViolation {
  /** The property as clients name it in JSON (lowerCamelCase path, e.g. `order.customerName`). */
  field: string;
  description: string;
}

/** A checked value, or every violation found. */
export type Checked<T> = { ok: true; value: T } | { ok: false; violations: FieldViolation[] };

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return uuidPattern.test(value);
}

/** Shortens client-supplied text before echoing it in an error message. */
export function truncate(value: string, max = 64): string {
  return value.length > max ? `${value.slice(0, max)}…` : value;
}
