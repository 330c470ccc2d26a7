// How a service looks over REST, resolved once from its `meshwork.api.v1.rest` option.
import { getOption, type DescService } from "@bufbuild/protobuf";
import { ErrorStyle, JsonNaming, rest } from "../gen/meshwork/api/v1/options_pb.js";

export type ErrorStyleName = "problem-json" | "error-message" | "reason-phrase";
export type JsonNamingName = "lower-camel" | "proto-name";

export interface ServiceStyle {
  readonly errorStyle: ErrorStyleName;
  readonly jsonNaming: JsonNamingName;
  readonly failedPreconditionStatus: number;
  readonly emitNullForUnset: boolean;
}

/** The style of a front's own errors when no method matched (404, 405). */
export interface FrontStyle {
  readonly errorStyle: ErrorStyle;
  readonly jsonNaming: JsonNaming;
}

function errorStyleName(style: ErrorStyle): ErrorStyleName {
  switch (style) {
    case ErrorStyle.ERROR_MESSAGE:
      return "error-message";
    case ErrorStyle.REASON_PHRASE:
      return "reason-phrase";
    default:
      return "problem-json";
  }
}

function jsonNamingName(naming: JsonNaming): JsonNamingName {
  return naming === JsonNaming.PROTO_NAME ? "proto-name" : "lower-camel";
}

export function serviceStyleOf(service: DescService): ServiceStyle {
  const opt = getOption(service, rest);
  const failedPreconditionStatus = opt.failedPreconditionStatus || 400;
  if (failedPreconditionStatus !== 400 && failedPreconditionStatus !== 422) {
    throw new Error(`${service.typeName}: rest.failed_precondition_status must be 400 or 422, ` + `got ${failedPreconditionStatus}`);
  }
  return {
    errorStyle: errorStyleName(opt.errorStyle),
    jsonNaming: jsonNamingName(opt.jsonNaming),
    failedPreconditionStatus,
    emitNullForUnset: opt.emitNullForUnset,
  };
}

const FALLBACK_STYLE: ServiceStyle = {
  errorStyle: "problem-json",
  jsonNaming: "lower-camel",
  failedPreconditionStatus: 400,
  emitNullForUnset: false,
};

/** A front's default: what the caller asked for, else what all its services agree on. */
export function frontStyleOf(services: readonly DescService[], requested: FrontStyle | undefined): ServiceStyle {
  if (requested) {
    return {
      errorStyle: errorStyleName(requested.errorStyle),
      jsonNaming: jsonNamingName(requested.jsonNaming),
      failedPreconditionStatus: 400,
      emitNullForUnset: false,
    };
  }
  const styles = services.map(serviceStyleOf);
  const first = styles[0];
  const agree = first !== undefined && styles.every((s) => s.errorStyle === first.errorStyle && s.jsonNaming === first.jsonNaming);
  return agree ? first : FALLBACK_STYLE;
}
