// What the tracking handlers need from the process that hosts them.
import type { ModuleDeps } from "../runtime/module/index.js";

export type TrackingDeps = Pick<ModuleDeps, "db" | "outbox" | "logger">;
