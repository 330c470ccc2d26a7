// The bridge's state, `~/.app/bridge.json` `{ enabled, autoConnect, defaultMode, channels: { <type>:
// { mode } } }`: seeded once from Bridge:Enabled, AutoConnect, DefaultMode and ChannelModes the
// first time it is needed, then edited by `app-daemon bridge enable|disable|passthrough` (a running
// daemon re-reads it through its control socket). `bridge status` adds overrideActive (some mode is
// not Passthrough), overrideChannels, effectiveMode (Disabled, Passthrough or Override) and connected.
import { existsSync, readFileSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { ConfigError } from "../runtime/config/index.js";
import type { BridgeSettings } from "./settings.js";

export const bridgeModes = ["Passthrough", "Intercept"] as const;
export type BridgeMode = (typeof bridgeModes)[number];

export interface BridgeState {
  enabled: boolean;
  autoConnect: boolean;
  defaultMode: BridgeMode;
  channels: Record<string, { mode: BridgeMode }>;
}

export interface BridgeReport extends BridgeState {
  overrideActive: boolean;
  overrideChannels: string[];
  effectiveMode: "Disabled" | "Passthrough" | "Override";
  connected: boolean;
}

export const bridgeStatePath = (dataDir: string) => join(dataDir, "bridge.json");

function modeOf(text: string): BridgeMode | undefined {
  return bridgeModes.find((m) => m.toLowerCase() === text.trim().toLowerCase());
}

/** `telegram=Intercept,slack=Passthrough`; throws a ConfigError (exit 2) naming the setting. */
export function parseChannelModes(text: string | undefined): Record<string, { mode: BridgeMode }> {
  const channels: Record<string, { mode: BridgeMode }> = {};
  for (const entry of (text ?? "").split(",")) {
    if (entry.trim() === "") continue;
    const [type, mode, extra] = entry.split("=");
    const parsed = mode === undefined ? undefined : modeOf(mode);
    const name = type?.trim().toLowerCase() ?? "";
    if (extra !== undefined || !parsed || !/^[a-z][a-z0-9_-]{0,63}$/.test(name)) {
      throw new ConfigError(
        `Invalid setting Bridge:ChannelModes entry ${JSON.stringify(entry.trim().slice(0, 80))}: expected <channel type>=Passthrough or <channel type>=Intercept, comma-separated.`,
      );
    }
    channels[name] = { mode: parsed };
  }
  return channels;
}

export function seedBridgeState(settings: BridgeSettings): BridgeState {
  return {
    enabled: settings.enabled,
    autoConnect: settings.autoConnect,
    defaultMode: modeOf(settings.defaultMode) ?? "Passthrough",
    channels: parseChannelModes(settings.channelModes),
  };
}

/** A state read back: anything malformed in the file is a clear error, not a crash later. */
function checkState(value: unknown, path: string): BridgeState {
  const v = value as Partial<BridgeState> | null;
  const channels: Record<string, { mode: BridgeMode }> = {};
  const bad = () => new Error(`${path} is not a bridge state ({ enabled, autoConnect, defaultMode, channels }); fix or remove it`);
  if (!v || typeof v !== "object" || typeof v.enabled !== "boolean" || typeof v.autoConnect !== "boolean") throw bad();
  const defaultMode = typeof v.defaultMode === "string" ? modeOf(v.defaultMode) : undefined;
  if (!defaultMode) throw bad();
  for (const [type, entry] of Object.entries(v.channels ?? {})) {
    const mode = typeof entry?.mode === "string" ? modeOf(entry.mode) : undefined;
    if (!mode) throw bad();
    channels[type] = { mode };
  }
  return { enabled: v.enabled, autoConnect: v.autoConnect, defaultMode, channels };
}

/** The state in `~/.app/bridge.json`, written from the settings the first time. */
export async function loadBridgeState(dataDir: string, settings: BridgeSettings): Promise<BridgeState> {
  const path = bridgeStatePath(dataDir);
  if (existsSync(path)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(path, "utf8"));
    } catch {
      parsed = undefined;
    }
    return checkState(parsed, path);
  }
  const seeded = seedBridgeState(settings);
  await saveBridgeState(dataDir, seeded);
  return seeded;
}

export async function saveBridgeState(dataDir: string, state: BridgeState): Promise<void> {
  const path = bridgeStatePath(dataDir);
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await rename(temp, path);
}

/** enable: enabled and autoConnect; disable: neither; passthrough: enabled, every mode Passthrough. */
export function changeBridge(state: BridgeState, verb: "enable" | "disable" | "passthrough"): BridgeState {
  if (verb === "enable") return { ...state, enabled: true, autoConnect: true };
  if (verb === "disable") return { ...state, enabled: false, autoConnect: false };
  return {
    ...state,
    enabled: true,
    defaultMode: "Passthrough",
    channels: Object.fromEntries(Object.keys(state.channels).map((type) => [type, { mode: "Passthrough" as const }])),
  };
}

export function channelMode(state: BridgeState, channelType: string): BridgeMode {
  return state.channels[channelType.toLowerCase()]?.mode ?? state.defaultMode;
}

export function bridgeReport(state: BridgeState, connected: boolean): BridgeReport {
  const overrideChannels = Object.entries(state.channels)
    .filter(([, entry]) => entry.mode !== "Passthrough")
    .map(([type]) => type)
    .sort();
  const overrideActive = state.defaultMode !== "Passthrough" || overrideChannels.length > 0;
  return {
    ...state,
    overrideActive,
    overrideChannels,
    effectiveMode: !state.enabled ? "Disabled" : overrideActive ? "Override" : "Passthrough",
    connected,
  };
}
