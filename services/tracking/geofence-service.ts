// tracking.v1.GeofenceService handlers. Owner: resources. Not implemented yet: every method answers Unimplemented (501).
import type { ServiceImpl } from "@connectrpc/connect";
import type { GeofenceService } from "../../gen/tracking/v1/geofence_pb.js";
import type { TrackingDeps } from "./deps.js";

export function geofenceService(_deps: TrackingDeps): Partial<ServiceImpl<typeof GeofenceService>> {
  return {};
}
