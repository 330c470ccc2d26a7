export { loadConfig, describeConfig, redactUrl, ConfigError } from "./load-config.js";
export type { ApiKeyConfig, ListItem, LoadConfigOptions, MeshworkConfig, SettingValue, WebhookEndpointConfig } from "./load-config.js";
export { settings } from "./settings.js";
export type { ListField, Setting, SettingType } from "./settings.js";
export { renderSettingsMarkdown, renderSettingsText, environmentForm } from "./settings-table.js";
