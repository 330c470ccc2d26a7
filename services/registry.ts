// Every service module Meshwork can host: `meshwork serve <name>` and the all-in-one mode find
// them here. Adding a service is a .proto, a module folder and one line below.
import { agentsModule } from "./agents/index.js";
import { protectionModule } from "./protection/index.js";
import type { ServiceModule } from "./runtime/module/index.js";
import { trackingModule } from "./tracking/index.js";

export const modules: readonly ServiceModule[] = [trackingModule, protectionModule, agentsModule];
