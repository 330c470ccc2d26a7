// What the tracking handlers need from the process that hosts them.
import type { ModuleDeps } from "../runtime/module/index.js";
import type { UnitOfWork } from "../runtime/outbox/index.js";
import type { TrackingEngine } from "./ingest/types.js";
import type { TrackingSettings } from "./settings.js";

export type TrackingDeps = ModuleDeps<TrackingSettings> & {
  engine: TrackingEngine;
  /** Every change that records events runs in it: one transaction, then the relay is woken. */
  uow: UnitOfWork;
};
