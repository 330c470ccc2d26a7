// The REASON_PHRASE error style: { "error": "<HTTP reason phrase>", "message": "<human readable>" },
// e.g. { "error": "Too Many Requests", ... }. `error` depends on the status alone, so clients can
// rely on it whatever the service names its errors.
import { reasonPhrase } from "../transcoder/status-codes.js";
import type { HttpError } from "./http-error.js";
import type { ErrorMessageDocument } from "./to-error-message.js";

export function toReasonPhrase(error: HttpError): ErrorMessageDocument {
  return { error: reasonPhrase(error.status), message: error.detail };
}
