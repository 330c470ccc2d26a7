// ConnectErrors that name the offending fields. Field violations travel as a google.rpc.BadRequest
// detail, which gRPC clients understand and the gateway turns into the problem+json `errors` map.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, BadRequest_FieldViolationSchema } from "../../../gen/google/rpc/error_details_pb.js";
import type { FieldViolation } from "./field-violation.js";

export type { FieldViolation };

function withViolations(message: string, code: Code, violations: FieldViolation[]): ConnectError {
  const detail = create(BadRequestSchema, {
    fieldViolations: violations.map((v) => create(BadRequest_FieldViolationSchema, v)),
  });
  return new ConnectError(message, code, undefined, [{ desc: BadRequestSchema, value: detail }]);
}

/** Malformed input (wrong type, bad uuid, missing field): HTTP 400. */
export function invalidArgument(violations: FieldViolation[], message?: string): ConnectError {
  return withViolations(message ?? summarise(violations), Code.InvalidArgument, violations);
}

/**
 * Well-formed input the domain refuses (latitude out of range, an unknown reference):
 * FailedPrecondition, which a service's rest option may render as 422.
 */
export function unprocessable(violations: FieldViolation[], message?: string): ConnectError {
  return withViolations(message ?? summarise(violations), Code.FailedPrecondition, violations);
}

export function notFound(message: string): ConnectError {
  return new ConnectError(message, Code.NotFound);
}

export function alreadyExists(message: string, violations: FieldViolation[] = []): ConnectError {
  return violations.length ? withViolations(message, Code.AlreadyExists, violations) : new ConnectError(message, Code.AlreadyExists);
}

function summarise(violations: FieldViolation[]): string {
  return violations.map((v) => `${v.field}: ${v.description}`).join("; ") || "invalid request";
}
