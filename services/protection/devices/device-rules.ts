// The checks of device requests, pure: each answers the value or the field it refuses and why.
export type Checked<T> = { ok: true; value: T } | { ok: false; field: string; message: string };

export const platforms = ["windows", "macos", "linux", "android", "ios"] as const;
export const heartbeatStatuses = ["ok", "degraded", "error"] as const;

const refuse = (field: string, message: string) => ({ ok: false, field, message }) as const;

function oneOf<T extends string>(field: string, values: readonly T[], value: string): Checked<T> {
  return (values as readonly string[]).includes(value)
    ? { ok: true, value: value as T }
    : refuse(field, `${field} must be one of ${values.join(", ")}`);
}

function text(field: string, value: string, max: number): Checked<string> {
  const trimmed = value.trim();
  if (trimmed.length < 1 || trimmed.length > max) return refuse(field, `${field} must be 1 to ${max} characters`);
  return { ok: true, value: trimmed };
}

export const checkPlatform = (value: string) => oneOf("platform", platforms, value);
export const checkHostname = (value: string) => text("hostname", value, 253);
export const checkAgentVersion = (value: string) => text("agent_version", value, 64);
export const checkHeartbeatStatus = (value: string) => oneOf("status", heartbeatStatuses, value);

export function checkBlocklistVersion(value: number | undefined): Checked<number> {
  if (value === undefined || !Number.isInteger(value) || value < 0)
    return refuse("blocklist_version", "blocklist_version must be 0 or more");
  return { ok: true, value };
}
