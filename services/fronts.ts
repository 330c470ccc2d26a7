// The three REST fronts, each its own listener with the JSON naming and error style of the
// interface it serves. A front listens even before any service is attached to it, so clients
// get answers in the right style (404 for every path) rather than a refused connection.
import { ErrorStyle, JsonNaming } from "../gen/meshwork/api/v1/options_pb.js";
import type { FrontStyle } from "../gateway/index.js";
import type { MeshworkConfig } from "./runtime/config/index.js";

export interface FrontDefinition {
  name: "tracking" | "protection" | "agents";
  port(config: MeshworkConfig): number;
  /** Style of gateway-made answers (404, 405, 413, ...); matched methods use their service's option. */
  style: FrontStyle;
}

export const frontDefinitions: readonly FrontDefinition[] = [
  {
    name: "tracking",
    port: (config) => config.gateway.tracking.port,
    style: { errorStyle: ErrorStyle.PROBLEM_JSON, jsonNaming: JsonNaming.LOWER_CAMEL },
  },
  {
    name: "protection",
    port: (config) => config.gateway.protection.port,
    style: { errorStyle: ErrorStyle.ERROR_MESSAGE, jsonNaming: JsonNaming.PROTO_NAME },
  },
  {
    name: "agents",
    port: (config) => config.gateway.agents.port,
    style: { errorStyle: ErrorStyle.ERROR_MESSAGE, jsonNaming: JsonNaming.LOWER_CAMEL },
  },
];
