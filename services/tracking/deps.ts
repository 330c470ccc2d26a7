// What the tracking handlers need from the process that hosts them.
import type { ModuleDeps } from "../runtime/module/index.js";
import type { TrackingEngine } from "./engine/types.js";
import type { TrackingSettings } from "./settings.js";

export type TrackingDeps = ModuleDeps<TrackingSettings> & { engine: TrackingEngine };
