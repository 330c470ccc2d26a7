// ObservationService: GetObservationHistory with json/csv/geojson/gpx. Owner: exports. Not implemented yet: every method answers Unimplemented (501).
import type { ServiceImpl } from "@connectrpc/connect";
import type { ObservationService } from "../../gen/tracking/v1/observation_pb.js";
import type { TrackingDeps } from "./deps.js";

export function observationHistory(_deps: TrackingDeps): Partial<ServiceImpl<typeof ObservationService>> {
  return {};
}
