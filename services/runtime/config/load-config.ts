// The configuration loader: the one place in Meshwork that reads the environment. Layers, later
// wins: built-in defaults < appsettings.json < appsettings.{Environment}.json < environment
// variables (`Section__Key`) < command-line flags (`--Section:Key=value`). The settings themselves
// are zod schemas declared by the runtime and by each service module (setting.ts).
import { existsSync, readFileSync } from "node:fs";
import { basename, isAbsolute, join, resolve } from "node:path";
import type { z } from "zod";
import type { SettingsSchema } from "./setting.js";
import { collectLeaves, type SettingLeaf } from "./settings-tree.js";

/** A bad setting. The message names the setting, the value's source and what was expected. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

export interface LoadConfigOptions {
  /** The runtime's settings and every module's; each is parsed on its own from the same values. */
  schemas: readonly SettingsSchema[];
  /** Old names that stop start-up with a message naming the new one (old → new). */
  renamed?: Readonly<Record<string, string>>;
  env?: Record<string, string | undefined>;
  /** Flags only (`--Section:Key=value`, `--Section:Key value`, `--environment Name`). */
  flags?: readonly string[];
  /** The base of relative paths, and where appsettings*.json are unless configDir says. Default: the working directory. */
  cwd?: string;
}

export interface LoadedConfig {
  environment: string;
  /**
   * The directory the appsettings files were read from: `--config-dir`, else MESHWORK_CONFIG_DIR,
   * else the working directory.
   */
  configDir: string;
  /** The appsettings files of this environment, in the order they apply (whether they exist or not). */
  configFiles: readonly string[];
  /** The typed settings of one of the schemas the config was loaded with. */
  get<S extends SettingsSchema>(schema: S): z.output<S>;
  /** Where each configured value came from ("default" for defaults), by key. */
  sources: ReadonlyMap<string, string>;
  /** The standard OTEL_* variables, handed to the telemetry module untouched. */
  otelEnv: Record<string, string>;
}

const INDEXED_KEY = /^(.+):(\d+):([^:]+)$/;
// `List:Setting:0` of a list of plain values.
const INDEXED_ITEM = /^(.+):(\d+)$/;

export function loadConfig(options: LoadConfigOptions): LoadedConfig {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const flags = parseFlags(options.flags ?? []);
  const environment = flags.environment || env.MESHWORK_ENVIRONMENT || env.ASPNETCORE_ENVIRONMENT || "Production";
  const configDir = resolve(cwd, flags.configDir || env.MESHWORK_CONFIG_DIR || ".");
  const configFiles = ["appsettings.json", `appsettings.${environment}.json`].map((file) => join(configDir, file));
  const leaves = collectLeaves(options.schemas);
  const byLowerKey = new Map(leaves.map((leaf) => [leaf.key.toLowerCase(), leaf]));
  const renamed = new Map(Object.entries(options.renamed ?? {}).map(([from, to]) => [from.toLowerCase(), to]));
  const sections = new Set(leaves.map((leaf) => leaf.key.split(":")[0]!.toLowerCase()));
  for (const from of renamed.keys()) sections.add(from.split(":")[0]!);

  const canonical = (key: string, source: string): SettingLeaf => {
    const lower = key.toLowerCase();
    const leaf = byLowerKey.get(lower);
    if (leaf) return leaf;
    const newName = renamed.get(lower);
    if (newName) throw new ConfigError(`The setting ${key} (from ${source}) is now called ${newName}.`);
    throw new ConfigError(`Unknown setting ${key} (from ${source}). Run \`meshwork --help\` for the list.`);
  };

  const raw = new Map<SettingLeaf, { value: unknown; source: string }>();
  // `List:Setting:0:Field` keys of one layer, gathered into whole lists when the layer ends.
  const indexed = new Map<SettingLeaf, { items: Map<number, Record<string, string>>; source: string }>();
  // Map settings (`Providers:<name>:<Field>`): entries gathered field by field, later layers winning.
  const maps = leaves.filter((leaf) => leaf.meta.map);
  const mapValues = new Map<SettingLeaf, Record<string, Record<string, unknown>>>();
  const mapSources = new Map<string, string>();
  const placeInMap = (key: string, value: unknown, source: string): boolean => {
    const lower = key.toLowerCase();
    const leaf = maps.find((m) => lower.startsWith(`${m.key.toLowerCase()}:`));
    if (!leaf) return false;
    const rest = key.slice(leaf.key.length + 1).split(":");
    if (rest.length < 2 || rest[0] === "")
      throw new ConfigError(`Unknown setting ${key} (from ${source}): expected ${leaf.key}:<name>:<Field>.`);
    const entries = mapValues.get(leaf) ?? {};
    mapValues.set(leaf, entries);
    const givenName = rest[0]!;
    const name = Object.keys(entries).find((n) => n.toLowerCase() === givenName.toLowerCase()) ?? givenName;
    const entry = (entries[name] ??= {});
    let field = rest.slice(1).join(":");
    const index = rest.length > 2 && /^\d+$/.test(rest.at(-1)!) ? Number(rest.at(-1)) : undefined;
    if (index !== undefined) field = rest.slice(1, -1).join(":");
    const existing = Object.keys(entry).find((f) => f.toLowerCase() === field.toLowerCase());
    if (existing) field = existing;
    if (index === undefined) entry[field] = value;
    else {
      const list = Array.isArray(entry[field]) ? (entry[field] as unknown[]) : [];
      list[index] = value;
      entry[field] = list;
    }
    mapSources.set(`${leaf.key}:${name}:${field}`.toLowerCase(), source);
    return true;
  };
  const flagAliases = new Map(leaves.flatMap((leaf) => (leaf.meta.flags ?? []).map((flag) => [flag.toLowerCase(), leaf.key] as const)));

  const items = new Map<SettingLeaf, { values: Map<number, unknown>; source: string }>();
  const place = (key: string, value: unknown, source: string): void => {
    if (placeInMap(key, value, source)) return;
    const scalar = INDEXED_ITEM.exec(key);
    const scalars = scalar ? byLowerKey.get(scalar[1]!.toLowerCase()) : undefined;
    if (scalars?.meta.scalarList) {
      const entry = items.get(scalars) ?? { values: new Map(), source };
      entry.values.set(Number(scalar![2]), value);
      items.set(scalars, entry);
      return;
    }
    const match = INDEXED_KEY.exec(key);
    const list = match ? byLowerKey.get(match[1]!.toLowerCase()) : undefined;
    if (!match || !list?.meta.listFields) {
      raw.set(canonical(key, source), { value, source });
      return;
    }
    const entry = indexed.get(list) ?? { items: new Map(), source };
    const item = entry.items.get(Number(match[2])) ?? {};
    item[match[3]!] = String(value);
    entry.items.set(Number(match[2]), item);
    indexed.set(list, entry);
  };
  const endLayer = (): void => {
    for (const [leaf, { items, source }] of indexed) {
      const ordered = [...items.entries()].sort(([a], [b]) => a - b).map(([, item]) => item);
      raw.set(leaf, { value: ordered, source });
    }
    indexed.clear();
    for (const [leaf, { values, source }] of items) {
      raw.set(leaf, { value: [...values.entries()].sort(([a], [b]) => a - b).map(([, v]) => v), source });
    }
    items.clear();
  };

  for (const path of configFiles) {
    if (!existsSync(path)) continue;
    for (const [key, value] of Object.entries(readJsonSettings(path))) place(key, value, basename(path));
    endLayer();
  }
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || !name.includes("__")) continue;
    if (!sections.has(name.split("__")[0]!.toLowerCase())) continue;
    place(name.replaceAll("__", ":"), value, `environment variable ${name}`);
  }
  endLayer();
  for (const leaf of leaves) {
    for (const alias of leaf.meta.aliases ?? []) {
      const value = env[alias];
      if (value !== undefined && value !== "" && !hasEnvCaseInsensitive(env, leaf.key.replaceAll(":", "__"))) {
        raw.set(leaf, { value, source: `environment variable ${alias}` });
      }
    }
  }
  for (const [key, value] of flags.values) place(flagAliases.get(key.toLowerCase()) ?? key, value, `flag --${key}`);
  endLayer();
  for (const [leaf, entries] of mapValues) {
    for (const [name, entry] of Object.entries(entries)) {
      for (const [field, pattern] of Object.entries(leaf.meta.map?.envFields ?? {})) {
        if (Object.keys(entry).some((f) => f.toLowerCase() === field.toLowerCase() && entry[f] !== "" && entry[f] !== undefined)) continue;
        const variable = pattern.replace("{NAME}", name.toUpperCase().replace(/[^A-Z0-9]/g, "_"));
        const found = env[variable];
        if (found !== undefined && found !== "") {
          entry[field] = found;
          mapSources.set(`${leaf.key}:${name}:${field}`.toLowerCase(), `environment variable ${variable}`);
        }
      }
    }
    raw.set(leaf, { value: entries, source: "settings" });
  }

  // One nested object of raw values; every schema picks its own leaves out of it.
  const tree: Record<string, unknown> = {};
  const sources = new Map<string, string>();
  for (const leaf of leaves) {
    let entry = raw.get(leaf);
    // An empty value unsets a setting that has no default (DATABASE_URL= means embedded).
    if (entry?.value === "" && leaf.meta.shownDefault === undefined && !leaf.meta.listFields) entry = undefined;
    let node = tree;
    for (const name of leaf.path.slice(0, -1)) node = (node[name] ??= {}) as Record<string, unknown>;
    if (!entry) {
      if (leaf.meta.shownDefault !== undefined) sources.set(leaf.key, "default");
      continue;
    }
    let value = entry.value;
    // Paths are resolved once, here: everything downstream (the embedded PostgreSQL's socket
    // directory above all) needs an absolute path whatever directory the process started in.
    if (leaf.meta.path && typeof value === "string" && value !== "" && !isAbsolute(value)) value = resolve(cwd, value);
    node[leaf.path.at(-1)!] = value;
    sources.set(leaf.key, entry.source);
  }
  // Paths that default to a relative directory resolve the same way.
  for (const leaf of leaves) {
    if (!leaf.meta.path || raw.has(leaf) || leaf.meta.shownDefault === undefined) continue;
    let node = tree;
    for (const name of leaf.path.slice(0, -1)) node = node[name] as Record<string, unknown>;
    node[leaf.path.at(-1)!] = resolve(cwd, leaf.meta.shownDefault);
  }

  const parsed = new Map<SettingsSchema, unknown>();
  for (const schema of new Set(options.schemas)) {
    const result = schema.safeParse(tree);
    if (!result.success) {
      const issue = result.error.issues[0]!;
      const leaf = leaves.find((l) => l.owner === schema && l.path.every((name, i) => issue.path[i] === name)) ?? leaves[0]!;
      const entry = raw.get(leaf);
      if (leaf.meta.map && issue.path.length > leaf.path.length) {
        const [name, field] = issue.path.slice(leaf.path.length).map(String);
        const key = field ? `${leaf.key}:${name}:${field}` : `${leaf.key}:${name}`;
        const value = field ? (entry?.value as Record<string, Record<string, unknown>> | undefined)?.[name!]?.[field] : undefined;
        const secret = field !== undefined && (leaf.meta.map.secretFields ?? []).some((f) => f.toLowerCase() === field.toLowerCase());
        const shown = field === undefined || field === "" ? "" : ` = ${secret ? "<redacted>" : JSON.stringify(value)}`;
        const source = mapSources.get(key.toLowerCase()) ?? "settings";
        throw new ConfigError(`Invalid setting ${key}${shown} (from ${source}): expected ${issue.message.replace(/^expected /, "")}.`);
      }
      const shown = leaf.meta.secret || leaf.meta.listFields?.some((f) => f.secret) ? "<redacted>" : JSON.stringify(entry?.value);
      throw new ConfigError(
        `Invalid setting ${leaf.key} = ${shown} (from ${entry?.source ?? "default"}): expected ${issue.message.replace(/^expected /, "")}.`,
      );
    }
    parsed.set(schema, result.data);
  }

  const otelEnv: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith("OTEL_") && value !== undefined) otelEnv[name] = value;
  }
  return {
    environment,
    configDir,
    configFiles,
    sources,
    otelEnv,
    get<S extends SettingsSchema>(schema: S) {
      if (!parsed.has(schema)) throw new Error("these settings were not loaded: pass their schema to loadConfig");
      return parsed.get(schema) as z.output<S>;
    },
  };
}

function parseFlags(argv: readonly string[]): { environment?: string; configDir?: string; values: [string, string][] } {
  const values: [string, string][] = [];
  let environment: string | undefined;
  let configDir: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith("--")) throw new ConfigError(`Unexpected argument '${arg}'. Flags look like --Section:Key=value.`);
    const body = arg.slice(2);
    const eq = body.indexOf("=");
    const name = eq >= 0 ? body.slice(0, eq) : body;
    let value: string | undefined = eq >= 0 ? body.slice(eq + 1) : undefined;
    if (value === undefined) {
      value = argv[i + 1];
      if (value === undefined || value.startsWith("--")) throw new ConfigError(`Flag --${name} needs a value.`);
      i++;
    }
    if (name.toLowerCase() === "environment") environment = value;
    else if (name.toLowerCase() === "config-dir") configDir = value;
    else values.push([name, value]);
  }
  return { environment, configDir, values };
}

function readJsonSettings(path: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new ConfigError(`${path} is not valid JSON: ${(err as Error).message}`);
  }
  const flat: Record<string, unknown> = {};
  const walk = (node: unknown, prefix: string) => {
    if (node !== null && typeof node === "object" && !Array.isArray(node)) {
      for (const [k, v] of Object.entries(node)) walk(v, prefix ? `${prefix}:${k}` : k);
    } else {
      flat[prefix] = node;
    }
  };
  walk(parsed, "");
  return flat;
}

function hasEnvCaseInsensitive(env: Record<string, string | undefined>, name: string): boolean {
  const lower = name.toLowerCase();
  return Object.keys(env).some((k) => k.toLowerCase() === lower && env[k] !== undefined);
}

function parseUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

/** A URL with any user name and password replaced: safe for logs and status pages. */
export function redactUrl(value: string): string {
  return value
    .split(",")
    .map((part) => {
      const url = parseUrl(part.trim());
      if (!url) return "<redacted>";
      if (url.username) url.username = "***";
      if (url.password) url.password = "***";
      return url.toString();
    })
    .join(",");
}
