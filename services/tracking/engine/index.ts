// The observation engine. Owner: engine. Not implemented yet.
import { Code, ConnectError } from "@connectrpc/connect";
import type { TrackingDeps } from "../deps.js";
import type { TrackingEngine } from "./types.js";

export type { RecordOptions, RecordResult, TrackingEngine } from "./types.js";

export async function createTrackingEngine(_deps: Omit<TrackingDeps, "engine">): Promise<TrackingEngine> {
  return {
    record: async () => {
      throw new ConnectError("observation engine not implemented", Code.Unimplemented);
    },
    applyGeofence: () => {},
    removeGeofence: () => {},
    stop: async () => {},
  };
}
