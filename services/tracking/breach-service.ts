// tracking.v1.GeofenceBreachService handlers. Owner: resources. Not implemented yet: every method answers Unimplemented (501).
import type { ServiceImpl } from "@connectrpc/connect";
import type { GeofenceBreachService } from "../../gen/tracking/v1/breach_pb.js";
import type { TrackingDeps } from "./deps.js";

export function breachService(_deps: TrackingDeps): Partial<ServiceImpl<typeof GeofenceBreachService>> {
  return {};
}
