// ObservationService: recording and reading observations, bulk paths. Owner: engine. Not implemented yet: every method answers Unimplemented (501).
import type { ServiceImpl } from "@connectrpc/connect";
import type { ObservationService } from "../../gen/tracking/v1/observation_pb.js";
import type { TrackingDeps } from "./deps.js";

export function observationCore(_deps: TrackingDeps): Partial<ServiceImpl<typeof ObservationService>> {
  return {};
}
