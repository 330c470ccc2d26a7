// How a service describes itself to the process that hosts it (service-module.ts).
export {
  defineModule,
  type FrontDeclaration,
  isProtected,
  type ModuleAuth,
  type ModuleDeps,
  type ModuleRuntime,
  type ModuleTelemetry,
  type ServiceModule,
  type Worker,
} from "./service-module.js";
