// The agent gateway's refusals as Connect codes; the front writes `{ error, message }` with the
// status the code maps to (InvalidArgument 400, NotFound 404, Aborted 409, ResourceExhausted 429,
// Unavailable 503, DeadlineExceeded 504). Messages name the setting, field or id concerned.
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema } from "../../../gen/google/rpc/error_details_pb.js";

export function refusal(code: Code, message: string, headers?: Record<string, string>): ConnectError {
  return new ConnectError(message, code, headers);
}

/** InvalidArgument naming the field (proto name) in a BadRequest detail and in the message. */
export function badRequest(field: string, message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument, undefined, [
    { desc: BadRequestSchema, value: { fieldViolations: [{ field, description: message }] } },
  ]);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A well-formed uuid, lower-cased; 400 naming `field` otherwise. */
export function checkId(field: string, value: string, what: string): string {
  if (!UUID.test(value)) throw badRequest(field, `${field} must be a uuid (got a malformed ${what} id)`);
  return value.toLowerCase();
}
