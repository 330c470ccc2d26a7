export { invalidArgument, unprocessable, notFound, alreadyExists } from "./field-errors.js";
export type { FieldViolation } from "./field-errors.js";
export { isUuid, requireUuid, truncate } from "./validate.js";
