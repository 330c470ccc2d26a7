// How a service describes itself to the process that hosts it (service-module.ts).
export {
  type CommandDeps,
  defineModule,
  type FrontDeclaration,
  type FrontPolicy,
  type FrontRoute,
  type FrontRouteDeps,
  isProtected,
  type ModuleAuth,
  type ModuleCommand,
  type ModuleDeps,
  type ModuleRuntime,
  type ModuleTask,
  type ModuleTelemetry,
  type ServiceModule,
  type Worker,
} from "./service-module.js";
