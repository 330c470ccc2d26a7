// Turns a failed call into the gateway's HttpError: status by the standard table, the service's
// message for client errors only, and google.rpc.BadRequest violations as per-field messages. An
// HttpErrorStatus detail may set a 4xx on a client error, or 502 on a server error.
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { HttpErrorStatusSchema } from "../../gen/meshwork/api/v1/options_pb.js";
import { codeName, httpStatusOf } from "../transcoder/status-codes.js";
import { HttpError, type FieldErrors } from "./http-error.js";

// A 5xx message is written for operators (hosts, SQL, stack hints), never for clients.
const GENERIC_DETAIL: Readonly<Record<number, string>> = {
  501: "This operation is not implemented.",
  502: "An upstream platform refused the request or could not be reached.",
  503: "The service is unavailable; try again later.",
  504: "The service did not answer in time.",
};
const INTERNAL_DETAIL = "The service failed to handle the request.";

export function fromConnectError(
  reason: unknown,
  failedPreconditionStatus = 400,
  renameField: (path: string) => string = (p) => p,
): HttpError {
  const err = ConnectError.from(reason);
  let status = httpStatusOf(err.code, failedPreconditionStatus);
  if (status >= 500) {
    // The one server-error override: 502 (an upstream platform failed), still with the generic text.
    if (safeStatusOverride(err) === 502) status = 502;
    // The service's code name (an ErrorInfo reason) is for clients; its message is not.
    return new HttpError(status, safeReason(err) ?? codeName(err.code), GENERIC_DETAIL[status] ?? INTERNAL_DETAIL);
  }
  const override = safeStatusOverride(err);
  if (override !== undefined && override >= 400 && override < 500) status = override;
  let fieldErrors: FieldErrors | undefined;
  for (const badRequest of safeFindBadRequests(err)) {
    for (const v of badRequest.fieldViolations) {
      const key = renameField(v.field);
      fieldErrors ??= {};
      (fieldErrors[key] ??= []).push(v.description);
    }
  }
  const detail = err.rawMessage !== "" ? err.rawMessage : err.code === Code.Canceled ? "The call was canceled." : "";
  return new HttpError(status, safeReason(err) ?? codeName(err.code), detail, fieldErrors);
}

/** The service's own name for the error (a google.rpc.ErrorInfo reason), when it gives one. */
function safeReason(err: ConnectError): string | undefined {
  try {
    const reason = err.findDetails(ErrorInfoSchema).find((info) => /^[A-Z][A-Z0-9_]{0,62}$/.test(info.reason))?.reason;
    return reason;
  } catch {
    return undefined;
  }
}

/** The status of a meshwork.api.v1.HttpErrorStatus detail, when the service attached one. */
function safeStatusOverride(err: ConnectError): number | undefined {
  try {
    return err.findDetails(HttpErrorStatusSchema)[0]?.status;
  } catch {
    return undefined;
  }
}

function safeFindBadRequests(err: ConnectError) {
  try {
    return err.findDetails(BadRequestSchema);
  } catch {
    // A detail that does not decode is the service's bug; the status still stands.
    return [];
  }
}
