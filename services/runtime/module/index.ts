export type { ModuleDeps, ModuleRuntime, ServiceModule } from "./service-module.js";
