// The configuration loader: the one place in Meshwork that reads the environment. Layers, later
// wins: built-in defaults < appsettings.json < appsettings.{Environment}.json < environment
// variables (`Section__Key`) < command-line flags (`--Section:Key=value`).
import { existsSync, readFileSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { settings, type ListField, type Setting } from "./settings.js";

/** One record of a list setting, by field name as the setting declares it (PascalCase). */
export type ListItem = Readonly<Record<string, string>>;
export type SettingValue = string | number | boolean | readonly ListItem[];

export interface ApiKeyConfig {
  name: string;
  role: "ingest" | "operator";
  key: string;
}

export interface WebhookEndpointConfig {
  url: string;
  secret?: string;
  /** Event types this endpoint receives; empty: all. */
  events: string[];
}

export interface MeshworkConfig {
  environment: string;
  dataDir: string;
  database: { url?: string; poolSize: number };
  nats: { url?: string };
  outbox: { pollIntervalMs: number };
  logging: { level: string };
  services: { host: string; port: number; tracking: { address: string } };
  gateway: {
    host: string;
    bodyLimitBytes: number;
    sseKeepAliveSeconds: number;
    tracking: { port: number };
    protection: { port: number };
    agents: { port: number };
  };
  auth: { apiKeys: ApiKeyConfig[]; allowAnonymousPublicBind: boolean };
  sseToken: { ttlMinutes: number };
  events: { clientBufferSize: number; replayWindow: number };
  webhooks: {
    endpoints: WebhookEndpointConfig[];
    signingEnabled: boolean;
    timeoutSeconds: number;
    maxAttempts: number;
    retryInitialDelayMs: number;
    retryMaxDelayMs: number;
    allowLoopback: boolean;
    allowPrivateNetworks: boolean;
  };
  tracking: {
    defaultSpeedThresholdKmh: number;
    speedAlertCooldownMinutes: number;
    simulationEnabled: boolean;
    exportMaxRows: number;
  };
  telemetry: {
    exporter: "console" | "otlp" | "zipkin" | "none";
    otlpProtocol: "grpc" | "http";
    endpoint?: string;
    serviceName: string;
    /** The standard OTEL_* variables, handed to the telemetry module untouched. */
    otelEnv: Record<string, string>;
  };
  /** Every setting by key, with the layer it came from. */
  values: ReadonlyMap<string, { value: SettingValue; source: string }>;
}

/** A bad setting. The message names the setting, the value's source and what was expected. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

export interface LoadConfigOptions {
  env?: Record<string, string | undefined>;
  /** Flags only (`--Section:Key=value`, `--Section:Key value`, `--environment Name`). */
  flags?: readonly string[];
  /** Directory holding appsettings*.json. */
  cwd?: string;
}

const byLowerKey = new Map(settings.map((s) => [s.key.toLowerCase(), s]));
const INDEXED_KEY = /^(.+):(\d+):([^:]+)$/;
const sections = new Set(settings.map((s) => s.key.split(":")[0]!.toLowerCase()));

export function loadConfig(options: LoadConfigOptions = {}): MeshworkConfig {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const flags = parseFlags(options.flags ?? []);
  const environment = flags.environment ?? env.MESHWORK_ENVIRONMENT ?? "Production";

  const raw = new Map<string, { value: unknown; source: string }>();
  // `List:Setting:0:Field` keys of one layer, gathered into whole lists when the layer ends.
  const indexed = new Map<string, { items: Map<number, Record<string, string>>; source: string }>();
  const place = (key: string, value: unknown, source: string): void => {
    const match = INDEXED_KEY.exec(key);
    const list = match ? byLowerKey.get(match[1]!.toLowerCase()) : undefined;
    if (!match || list?.type.kind !== "list") {
      raw.set(canonical(key, source), { value, source });
      return;
    }
    const entry = indexed.get(list.key) ?? { items: new Map(), source };
    const item = entry.items.get(Number(match[2])) ?? {};
    item[match[3]!] = String(value);
    entry.items.set(Number(match[2]), item);
    indexed.set(list.key, entry);
  };
  const endLayer = (): void => {
    for (const [key, { items, source }] of indexed) {
      const ordered = [...items.entries()].sort(([a], [b]) => a - b).map(([, item]) => item);
      raw.set(key, { value: ordered, source });
    }
    indexed.clear();
  };
  for (const s of settings) {
    if (s.default !== undefined) raw.set(s.key, { value: s.default, source: "default" });
  }
  for (const file of ["appsettings.json", `appsettings.${environment}.json`]) {
    const path = join(cwd, file);
    if (!existsSync(path)) continue;
    for (const [key, value] of Object.entries(readJsonSettings(path))) {
      raw.set(canonical(key, file), { value, source: file });
    }
  }
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || !name.includes("__")) continue;
    if (!sections.has(name.split("__")[0]!.toLowerCase())) continue;
    place(name.replaceAll("__", ":"), value, `environment variable ${name}`);
  }
  endLayer();
  for (const s of settings) {
    for (const alias of s.aliases ?? []) {
      const envKey = s.key.replaceAll(":", "__");
      const value = env[alias];
      if (value !== undefined && value !== "" && !hasEnvCaseInsensitive(env, envKey)) {
        raw.set(s.key, { value, source: `environment variable ${alias}` });
      }
    }
  }
  for (const [key, value] of flags.values) {
    place(key, value, `flag --${key}`);
  }
  endLayer();

  const values = new Map<string, { value: SettingValue; source: string }>();
  for (const [key, { value, source }] of raw) {
    if (value === "" && byLowerKey.get(key.toLowerCase())?.default === undefined) continue;
    values.set(key, { value: coerce(byLowerKey.get(key.toLowerCase())!, value, source), source });
  }
  // Paths are resolved once, here, against the working directory: everything downstream (the
  // embedded PostgreSQL's socket directory above all) needs an absolute path.
  for (const s of settings) {
    const entry = values.get(s.key);
    if (s.type.kind === "path" && entry && typeof entry.value === "string" && !isAbsolute(entry.value)) {
      values.set(s.key, { ...entry, value: resolve(cwd, entry.value) });
    }
  }
  return toTyped(environment, values, env);
}

function toTyped(
  environment: string,
  values: Map<string, { value: SettingValue; source: string }>,
  env: Record<string, string | undefined>,
): MeshworkConfig {
  // Defaults guarantee a value for every setting but the optional URLs; coerce() fixed the types.
  const get = <T extends SettingValue>(key: string) => values.get(key)?.value as T;
  const optional = (key: string) => values.get(key)?.value as string | undefined;
  const list = (key: string) => (values.get(key)?.value as readonly ListItem[] | undefined) ?? [];
  const otelEnv: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (name.startsWith("OTEL_") && value !== undefined) otelEnv[name] = value;
  }
  return {
    environment,
    dataDir: get("Data:Dir"),
    database: { url: optional("Database:Url"), poolSize: get("Database:PoolSize") },
    nats: { url: optional("Nats:Url") },
    outbox: { pollIntervalMs: get("Outbox:PollIntervalMs") },
    logging: { level: get("Logging:Level") },
    services: {
      host: get("Services:Host"),
      port: get("Services:Port"),
      tracking: { address: get("Services:Tracking:Address") },
    },
    gateway: {
      host: get("Gateway:Host"),
      bodyLimitBytes: get("Gateway:BodyLimitBytes"),
      sseKeepAliveSeconds: get("Gateway:SseKeepAliveSeconds"),
      tracking: { port: get("Gateway:Tracking:Port") },
      protection: { port: get("Gateway:Protection:Port") },
      agents: { port: get("Gateway:Agents:Port") },
    },
    auth: {
      apiKeys: list("Auth:ApiKeys").map((item) => ({
        name: item.Name!,
        role: item.Role as ApiKeyConfig["role"],
        key: item.Key!,
      })),
      allowAnonymousPublicBind: get("Auth:AllowAnonymousPublicBind"),
    },
    sseToken: { ttlMinutes: get("SseToken:TtlMinutes") },
    events: { clientBufferSize: get("Events:ClientBufferSize"), replayWindow: get("Events:ReplayWindow") },
    webhooks: {
      endpoints: list("Webhooks:Endpoints").map((item) => ({
        url: item.Url!,
        ...(item.Secret !== undefined ? { secret: item.Secret } : {}),
        events: (item.Events ?? "")
          .split(",")
          .map((type) => type.trim())
          .filter((type) => type !== "" && type !== "*"),
      })),
      signingEnabled: get("Webhooks:SigningEnabled"),
      timeoutSeconds: get("Webhooks:TimeoutSeconds"),
      maxAttempts: get("Webhooks:MaxAttempts"),
      retryInitialDelayMs: get("Webhooks:RetryInitialDelayMs"),
      retryMaxDelayMs: get("Webhooks:RetryMaxDelayMs"),
      allowLoopback: get("Webhooks:AllowLoopback"),
      allowPrivateNetworks: get("Webhooks:AllowPrivateNetworks"),
    },
    tracking: {
      defaultSpeedThresholdKmh: get("Tracking:DefaultSpeedThresholdKmh"),
      speedAlertCooldownMinutes: get("Tracking:SpeedAlertCooldownMinutes"),
      simulationEnabled: get("Tracking:SimulationEnabled"),
      exportMaxRows: get("Tracking:ExportMaxRows"),
    },
    telemetry: {
      exporter: get("Telemetry:Exporter"),
      otlpProtocol: get("Telemetry:OtlpProtocol"),
      endpoint: optional("Telemetry:Endpoint"),
      serviceName: get("Telemetry:ServiceName"),
      otelEnv,
    },
    values,
  };
}

function parseFlags(argv: readonly string[]): { environment?: string; values: [string, string][] } {
  const values: [string, string][] = [];
  let environment: string | undefined;
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
    else values.push([name, value]);
  }
  return { environment, values };
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

function canonical(key: string, source: string): string {
  const setting = byLowerKey.get(key.toLowerCase());
  if (!setting) throw new ConfigError(`Unknown setting ${key} (from ${source}). Run \`meshwork --help\` for the list.`);
  return setting.key;
}

function hasEnvCaseInsensitive(env: Record<string, string | undefined>, name: string): boolean {
  const lower = name.toLowerCase();
  return Object.keys(env).some((k) => k.toLowerCase() === lower && env[k] !== undefined);
}

function coerce(setting: Setting, value: unknown, source: string): SettingValue {
  const fail = (expected: string): never => {
    const shown = setting.secret ? "<redacted>" : JSON.stringify(value);
    throw new ConfigError(`Invalid setting ${setting.key} = ${shown} (from ${source}): expected ${expected}.`);
  };
  const type = setting.type;
  switch (type.kind) {
    case "path":
    case "string":
      if (typeof value !== "string" || value === "") fail("a non-empty string");
      return value as string;
    case "int": {
      const n = typeof value === "number" ? value : typeof value === "string" && /^-?\d+$/.test(value.trim()) ? Number(value) : NaN;
      const range = `an integer${type.min !== undefined ? ` from ${type.min}` : ""}${type.max !== undefined ? ` to ${type.max}` : ""}`;
      if (!Number.isSafeInteger(n)) fail(range);
      if ((type.min !== undefined && n < type.min) || (type.max !== undefined && n > type.max)) fail(range);
      return n;
    }
    case "bool":
      if (typeof value === "boolean") return value;
      if (typeof value === "string" && /^(true|false)$/i.test(value)) return value.toLowerCase() === "true";
      return fail("true or false");
    case "enum": {
      const match = typeof value === "string" ? type.values.find((v) => v === value.toLowerCase()) : undefined;
      return match ?? fail(`one of ${type.values.join(", ")}`);
    }
    case "list":
      return coerceList(type.fields, value, fail);
    case "url": {
      const parts = typeof value === "string" ? (type.list ? value.split(",").map((v) => v.trim()) : [value]) : [];
      const valid = parts.length > 0 && parts.every((part) => type.protocols.includes(parseUrl(part)?.protocol ?? ""));
      if (!valid) fail(`${type.list ? "comma-separated URLs" : "a URL"} starting with ${type.protocols.join(" or ")}//`);
      return value as string;
    }
  }
}

function coerceList(fields: readonly ListField[], value: unknown, fail: (expected: string) => never): readonly ListItem[] {
  const shape = `a JSON array of objects with ${fields.map((f) => f.name).join(", ")}`;
  let items: unknown = value;
  if (typeof value === "string") {
    try {
      items = JSON.parse(value);
    } catch {
      return fail(shape);
    }
  }
  if (!Array.isArray(items)) return fail(shape);
  return items.map((item: unknown, index) => {
    if (item === null || typeof item !== "object" || Array.isArray(item)) return fail(`${shape} (item ${index} is not an object)`);
    const out: Record<string, string> = {};
    for (const [name, fieldValue] of Object.entries(item)) {
      const field = fields.find((f) => f.name.toLowerCase() === name.toLowerCase());
      if (!field) return fail(`${shape} (item ${index} has an unknown field ${name})`);
      if (fieldValue === null || fieldValue === undefined) continue;
      if (typeof fieldValue !== "string" && typeof fieldValue !== "number" && typeof fieldValue !== "boolean") {
        return fail(`${shape} (item ${index}: ${field.name} must be a string)`);
      }
      out[field.name] = String(fieldValue);
    }
    for (const field of fields) {
      const given = out[field.name];
      if (given === undefined || given === "") {
        if (field.required) return fail(`${shape} (item ${index} lacks ${field.name})`);
        delete out[field.name];
        continue;
      }
      if (field.values && !field.values.includes(given.toLowerCase())) {
        return fail(`${shape} (item ${index}: ${field.name} must be one of ${field.values.join(", ")})`);
      }
      if (field.values) out[field.name] = given.toLowerCase();
      if (field.minLength !== undefined && given.length < field.minLength) {
        return fail(`${shape} (item ${index}: ${field.name} must have at least ${field.minLength} characters)`);
      }
    }
    return out;
  });
}

/** A list setting's records as they are safe to show: secret fields masked. */
function describeList(setting: Setting, items: readonly ListItem[]): string {
  if (setting.type.kind !== "list") return "";
  const secretFields = new Set(setting.type.fields.filter((f) => f.secret).map((f) => f.name));
  const shown = items.map((item) =>
    Object.fromEntries(Object.entries(item).map(([name, v]) => [name, secretFields.has(name) ? "***" : name === "Url" ? redactUrl(v) : v])),
  );
  return JSON.stringify(shown);
}

/** The configuration as it is safe to show: secrets keep their shape, never their password. */
export function describeConfig(config: MeshworkConfig): { key: string; value: string; source: string }[] {
  return [...config.values.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, { value, source }]) => {
      const setting = byLowerKey.get(key.toLowerCase())!;
      if (Array.isArray(value)) return { key, value: describeList(setting, value as readonly ListItem[]), source };
      return { key, value: setting.secret ? redactUrl(String(value)) : String(value), source };
    });
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
