// The standard Connect code → HTTP status table, and the names clients see for each code.
import { STATUS_CODES } from "node:http";
import { Code } from "@connectrpc/connect";

const STATUS_BY_CODE: Readonly<Record<Code, number>> = {
  [Code.Canceled]: 499,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 400,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 400,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 400,
  [Code.Unimplemented]: 501,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};

/** `failedPreconditionStatus` comes from the service's rest option: 400 or 422. */
export function httpStatusOf(code: Code, failedPreconditionStatus = 400): number {
  if (code === Code.FailedPrecondition) return failedPreconditionStatus;
  return STATUS_BY_CODE[code] ?? 500;
}

const NAME_BY_CODE = new Map<Code, string>(
  Object.values(Code)
    .filter((v): v is Code => typeof v === "number")
    .map((c) => [c, Code[c].replace(/(?<=[a-z])(?=[A-Z])/g, "_").toLowerCase()]),
);

/** snake_case name of a code, as the error-message style writes it: `not_found`. */
export function codeName(code: Code): string {
  return NAME_BY_CODE.get(code) ?? "unknown";
}

const EXTRA_PHRASES: Readonly<Record<number, string>> = { 499: "Client Closed Request" };

/** The HTTP reason phrase, used as the problem title. */
export function reasonPhrase(status: number): string {
  return STATUS_CODES[status] ?? EXTRA_PHRASES[status] ?? "Error";
}
