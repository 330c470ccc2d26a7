// What the tracking handlers need from the process that hosts them.
import type { ModuleDeps } from "../runtime/module/index.js";
import type { TrackingEngine } from "./ingest/types.js";

export type TrackingDeps = ModuleDeps & { engine: TrackingEngine };
