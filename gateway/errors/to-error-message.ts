// The ERROR_MESSAGE error style: { "error": "<UPPER_SNAKE code>", "message": "<human readable>" }.
// The code is the service's own (a google.rpc.ErrorInfo reason) when it names one; otherwise the
// status's name in the vocabulary such APIs use (VALIDATION_ERROR, UNAUTHORIZED, FORBIDDEN, ...).
import type { HttpError } from "./http-error.js";

export const ERROR_MESSAGE_CONTENT_TYPE = "application/json";

export interface ErrorMessageDocument {
  error: string;
  message: string;
}

// Connect code names and the gateway's own refusals whose usual name in this style differs.
const CODE_BY_NAME: Readonly<Record<string, string>> = {
  invalid_argument: "VALIDATION_ERROR",
  bad_request: "VALIDATION_ERROR",
  out_of_range: "VALIDATION_ERROR",
  failed_precondition: "VALIDATION_ERROR",
  unauthenticated: "UNAUTHORIZED",
  permission_denied: "FORBIDDEN",
  resource_exhausted: "RATE_LIMIT_EXCEEDED",
  already_exists: "CONFLICT",
  internal: "INTERNAL_ERROR",
  unknown: "INTERNAL_ERROR",
  data_loss: "INTERNAL_ERROR",
  unavailable: "SERVICE_UNAVAILABLE",
};

/** The error code the style writes for an error name: a service's reason stays as it is. */
export function errorCodeOf(errorName: string): string {
  return CODE_BY_NAME[errorName] ?? errorName.toUpperCase();
}

export function toErrorMessage(error: HttpError): ErrorMessageDocument {
  return { error: errorCodeOf(error.errorName), message: error.detail };
}
