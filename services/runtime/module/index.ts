export type { ModuleDeps, ServiceModule } from "./service-module.js";
