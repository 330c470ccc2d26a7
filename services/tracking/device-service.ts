// tracking.v1.DeviceService handlers. Owner: resources. Not implemented yet: every method answers Unimplemented (501).
import type { ServiceImpl } from "@connectrpc/connect";
import type { DeviceService } from "../../gen/tracking/v1/device_pb.js";
import type { TrackingDeps } from "./deps.js";

export function deviceService(_deps: TrackingDeps): Partial<ServiceImpl<typeof DeviceService>> {
  return {};
}
