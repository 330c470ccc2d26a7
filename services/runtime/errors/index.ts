export { invalidArgument, unprocessable, notFound, alreadyExists } from "./field-errors.js";
export type { Checked, FieldViolation } from "./field-violation.js";
export { isUuid, requireUuid, truncate } from "./validate.js";
