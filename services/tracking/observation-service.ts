// tracking.v1.ObservationService, composed from its parts: recording and reading, history
// exports, and the simulator. Each part names the rpcs it implements; the whole must be complete,
// so an rpc added to the contract and implemented nowhere fails the type check.
import type { ServiceImpl } from "@connectrpc/connect";
import type { ObservationService } from "../../gen/tracking/v1/observation_pb.js";
import type { TrackingDeps } from "./deps.js";
import { observationCore } from "./observation-core.js";
import { observationHistory } from "./observation-history.js";
import { observationSimulation } from "./simulation.js";

export function observationService(deps: TrackingDeps): ServiceImpl<typeof ObservationService> {
  return { ...observationCore(deps), ...observationHistory(deps), ...observationSimulation(deps) };
}
