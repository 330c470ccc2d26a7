// The ERROR_MESSAGE error style: { "error": "<snake_case code>", "message": "<human readable>" }.
import type { HttpError } from "./http-error.js";

export const ERROR_MESSAGE_CONTENT_TYPE = "application/json";

export interface ErrorMessageDocument {
  error: string;
  message: string;
}

export function toErrorMessage(error: HttpError): ErrorMessageDocument {
  return { error: error.errorName, message: error.detail };
}
