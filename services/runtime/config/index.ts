// Settings: declared as zod schemas (setting.ts) by the runtime and by each service module, loaded
// from defaults, appsettings files, the environment and flags (load-config.ts).
export { ConfigError, type LoadConfigOptions, type LoadedConfig, loadConfig, redactUrl } from "./load-config.js";
export { type RuntimeSettings, renamedRuntimeSettings, runtimeSettings } from "./runtime-settings.js";
export {
  type ListFieldSpec,
  type MapSpec,
  parseTimeSpan,
  type SettingMeta,
  type SettingsOf,
  type SettingsSchema,
  setting,
  settingMeta,
  stringList,
} from "./setting.js";
export { environmentForm, renderSettingsMarkdown, renderSettingsText } from "./settings-table.js";
export { collectLeaves, leavesOf, type SettingLeaf } from "./settings-tree.js";
export { type AppliedSettings, type ConfigWatch, type ConfigWatchOptions, watchConfig } from "./watch-config.js";
