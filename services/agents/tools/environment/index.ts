// get_environment: the host the tools run on (OS, architecture, host name, Node version, the
// workspace, the time zone) and, with includeEnvVars, the process environment. A value is masked as
// `***` when its name looks secret, when it holds a URL with a password, or when it equals (or
// contains) the value of a configured secret setting: the `Tools:*` secrets and whatever the module
// passes as `services.secrets`.
import { arch, hostname, platform, release, userInfo } from "node:os";
import type { SettingsSchema } from "../../../runtime/config/setting.js";
import { leavesOf } from "../../../runtime/config/settings-tree.js";
import { toolsSettings } from "../settings.js";
import type { ToolContext, ToolSpec } from "../tool.js";

export const MASK = "***";

const SECRET_NAME = /key|secret|token|passw|credential|auth|cookie|session|private|signature|certificate|_pwd$|^pwd_|dsn$/i;
const URL_WITH_PASSWORD = /[a-z][a-z0-9+.-]*:\/\/[^/\s:@]*:[^/\s@]+@/i;
/** Secrets shorter than this are not looked for inside other values (too many false hits). */
const MIN_CONTAINED_SECRET = 6;

/** Every string inside `value` (a secret setting's value may be a list or a record). */
function stringsIn(value: unknown, out: string[]): void {
  if (typeof value === "string") {
    if (value !== "") out.push(value);
  } else if (Array.isArray(value)) for (const item of value) stringsIn(item, out);
  else if (typeof value === "object" && value !== null) for (const item of Object.values(value)) stringsIn(item, out);
}

const SECRET_FIELD = /key|secret|token|password|credential/i;

/**
 * The values of the secret settings of `schema` that are set in `settings` (the typed object it
 * parsed to): a secret setting's every string; of a list setting, the fields that look secret; of a
 * map setting, its secret fields. For a module to pass as `services.secrets`.
 */
export function secretValuesOf(schema: SettingsSchema, settings: unknown): string[] {
  const values: string[] = [];
  for (const leaf of leavesOf(schema)) {
    const { secret, listFields, map } = leaf.meta;
    if (!secret && !listFields?.some((f) => f.secret) && !map?.secretFields?.length) continue;
    let value: unknown = settings;
    for (const segment of leaf.path) value = (value as Record<string, unknown> | undefined)?.[segment];
    if (secret) stringsIn(value, values);
    else if (map?.secretFields && typeof value === "object" && value !== null) {
      const fields = map.secretFields.map((f) => f.toLowerCase());
      for (const entry of Object.values(value)) {
        if (typeof entry !== "object" || entry === null) continue;
        for (const [field, v] of Object.entries(entry)) if (fields.includes(field.toLowerCase())) stringsIn(v, values);
      }
    } else if (Array.isArray(value)) {
      for (const item of value) {
        if (typeof item !== "object" || item === null) continue;
        for (const [field, v] of Object.entries(item)) if (SECRET_FIELD.test(field)) stringsIn(v, values);
      }
    }
  }
  return values;
}

/** The values of the secret `Tools:*` settings that are set. */
export function toolSecretValues(settings: ToolContext["settings"]): string[] {
  return secretValuesOf(toolsSettings, settings);
}

export function looksSecret(name: string, value: string, secrets: readonly string[]): boolean {
  if (SECRET_NAME.test(name) || URL_WITH_PASSWORD.test(value)) return true;
  return secrets.some((secret) => secret === value || (secret.length >= MIN_CONTAINED_SECRET && value.includes(secret)));
}

/** The environment as get_environment shows it: names sorted, secret values masked. */
export function maskedEnvironment(env: NodeJS.ProcessEnv, secrets: readonly string[]): Record<string, string> {
  const shown: Record<string, string> = {};
  for (const name of Object.keys(env).sort()) {
    const value = env[name] ?? "";
    shown[name] = looksSecret(name, value, secrets) ? MASK : value;
  }
  return shown;
}

function configuredSecrets(ctx: ToolContext): string[] {
  const extra = ctx.services.secrets?.() ?? [];
  return [...toolSecretValues(ctx.settings), ...extra.filter((s) => typeof s === "string" && s !== "")];
}

export const environmentTools: ToolSpec[] = [
  {
    name: "get_environment",
    description:
      "Describe the environment the tools run in (OS, architecture, host name, Node version, workspace, time zone); includeEnvVars adds the environment variables, secret values masked as ***.",
    tier: "A",
    parameters: {
      type: "object",
      properties: {
        includeEnvVars: { type: "boolean", default: false, description: "Also list the environment variables (secrets masked)." },
      },
    },
    async run(args, ctx) {
      let user: string | undefined;
      try {
        user = userInfo().username;
      } catch {
        user = undefined;
      }
      const record: Record<string, unknown> = {
        os: platform(),
        osRelease: release(),
        architecture: arch(),
        hostName: hostname(),
        user,
        nodeVersion: process.version,
        workspace: ctx.settings.workspaceRoot,
        timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
        time: new Date().toISOString(),
      };
      if (args.includeEnvVars === true) record.envVars = maskedEnvironment(process.env, configuredSecrets(ctx));
      return record;
    },
  },
];
