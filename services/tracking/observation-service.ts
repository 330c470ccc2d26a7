// tracking.v1.ObservationService, composed from its parts: recording and reading, history
// exports, and the simulator.
import type { ServiceImpl } from "@connectrpc/connect";
import type { ObservationService } from "../../gen/tracking/v1/observation_pb.js";
import type { TrackingDeps } from "./deps.js";
import { observationCore } from "./observation-core.js";
import { observationHistory } from "./observation-history.js";
import { observationSimulation } from "./simulation.js";

export function observationService(deps: TrackingDeps): Partial<ServiceImpl<typeof ObservationService>> {
  return { ...observationCore(deps), ...observationHistory(deps), ...observationSimulation(deps) };
}
