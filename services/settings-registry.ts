// Every service module's settings, without the modules themselves: the configuration loader reads
// them from here, so a command that only reads settings (`app-daemon status`, say) starts without
// loading every service's implementation. registry.ts lists the modules; a test
// (services/settings-registry.test.ts) keeps the two lists in step.
import { agentsRenamedSettings, agentsSettings } from "./agents/module-settings.js";
import { protectionRenamedSettings, protectionSettings } from "./protection/settings.js";
import type { SettingsSchema } from "./runtime/config/index.js";
import { trackingRenamedSettings, trackingSettings } from "./tracking/settings.js";

/** What the configuration needs of a module: its name, its settings and the keys it renamed. */
export interface ModuleSettings {
  name: string;
  settings: SettingsSchema;
  renamedSettings?: Readonly<Record<string, string>>;
}

export const moduleSettings: readonly ModuleSettings[] = [
  { name: "tracking", settings: trackingSettings, renamedSettings: trackingRenamedSettings },
  { name: "protection", settings: protectionSettings, renamedSettings: protectionRenamedSettings },
  { name: "agents", settings: agentsSettings, renamedSettings: agentsRenamedSettings },
];
