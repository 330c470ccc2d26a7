// ObservationService: SimulateObservations presets. Owner: system. Not implemented yet: every method answers Unimplemented (501).
import type { ServiceImpl } from "@connectrpc/connect";
import type { ObservationService } from "../../gen/tracking/v1/observation_pb.js";
import type { TrackingDeps } from "./deps.js";

export function observationSimulation(_deps: TrackingDeps): Partial<ServiceImpl<typeof ObservationService>> {
  return {};
}
