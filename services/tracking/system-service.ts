// tracking.v1.SystemService handlers. Owner: system. Not implemented yet: every method answers Unimplemented (501).
import type { ServiceImpl } from "@connectrpc/connect";
import type { SystemService } from "../../gen/tracking/v1/system_pb.js";
import type { TrackingDeps } from "./deps.js";

export function systemService(_deps: TrackingDeps): Partial<ServiceImpl<typeof SystemService>> {
  return {};
}
