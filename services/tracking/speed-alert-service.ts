// tracking.v1.SpeedAlertService handlers. Owner: resources. Not implemented yet: every method answers Unimplemented (501).
import type { ServiceImpl } from "@connectrpc/connect";
import type { SpeedAlertService } from "../../gen/tracking/v1/speed_alert_pb.js";
import type { TrackingDeps } from "./deps.js";

export function speedAlertService(_deps: TrackingDeps): Partial<ServiceImpl<typeof SpeedAlertService>> {
  return {};
}
