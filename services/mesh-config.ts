// The mesh's configuration: the runtime's settings and every registered module's (from
// settings-registry.ts, without the modules' code), loaded together so an unknown or renamed key is
// caught whichever module it belongs to.
import {
  collectLeaves,
  type LoadConfigOptions,
  type LoadedConfig,
  loadConfig,
  renamedRuntimeSettings,
  renderSettingsMarkdown,
  renderSettingsText,
  type RuntimeSettings,
  runtimeSettings,
  type SettingLeaf,
  type SettingsSchema,
} from "./runtime/config/index.js";
import { type ModuleSettings, moduleSettings as registered } from "./settings-registry.js";

export interface MeshConfig extends LoadedConfig {
  runtime: RuntimeSettings;
  /** Loads the configuration again from the same files, environment and flags (hot reload). */
  load(): MeshConfig;
}

function schemasOf(modules: readonly ModuleSettings[]): SettingsSchema[] {
  return [runtimeSettings, ...modules.map((m) => m.settings)];
}

export function loadMeshConfig(
  options: Omit<LoadConfigOptions, "schemas" | "renamed"> = {},
  modules: readonly ModuleSettings[] = registered,
): MeshConfig {
  const renamed = Object.assign({}, renamedRuntimeSettings, ...modules.map((m) => m.renamedSettings ?? {}));
  const loaded = loadConfig({ ...options, schemas: schemasOf(modules), renamed });
  return { ...loaded, runtime: loaded.get(runtimeSettings), load: () => loadMeshConfig(options, modules) };
}

/** The README's configuration table: `npm run settings-table`. */
export function settingsMarkdown(modules: readonly ModuleSettings[] = registered): string {
  return renderSettingsMarkdown(schemasOf(modules));
}

export function settingsText(modules: readonly ModuleSettings[] = registered): string {
  return renderSettingsText(schemasOf(modules));
}

/** Every setting the mesh knows, the runtime's first, with its documented key and metadata. */
export function meshSettings(modules: readonly ModuleSettings[] = registered): SettingLeaf[] {
  return collectLeaves(schemasOf(modules));
}
