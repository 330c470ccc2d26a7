export { loadConfig, describeConfig, redactUrl, ConfigError } from "./load-config.js";
export type { MeshworkConfig, LoadConfigOptions, SettingValue } from "./load-config.js";
export { settings } from "./settings.js";
export type { Setting, SettingType } from "./settings.js";
export { renderSettingsMarkdown, renderSettingsText, environmentForm } from "./settings-table.js";
