// Capability introspection (tier A, no parameters): get_capabilities answers the agent's model's
// { contextWindow, vision, toolCalling, streaming, json_mode }, check_vision_support its vision,
// get_context_window its context window. Known model families by name prefix; an unknown model
// gets { 128000, vision, toolCalling, streaming, json_mode all true }.
import type { ToolSpec } from "../tool.js";
import { agentOf } from "./agent-of.js";

export interface Capabilities {
  contextWindow: number;
  vision: boolean;
  toolCalling: boolean;
  streaming: boolean;
  json_mode: boolean;
}

export const UNKNOWN_MODEL: Capabilities = { contextWindow: 128_000, vision: true, toolCalling: true, streaming: true, json_mode: true };

const all = { toolCalling: true, streaming: true, json_mode: true };
// Longest prefix first.
const known: [prefix: string, caps: Capabilities][] = (
  [
    ["gpt-4o-mini", { contextWindow: 128_000, vision: true, ...all }],
    ["gpt-4o", { contextWindow: 128_000, vision: true, ...all }],
    ["gpt-4.1", { contextWindow: 1_047_576, vision: true, ...all }],
    ["gpt-4-turbo", { contextWindow: 128_000, vision: true, ...all }],
    ["gpt-4", { contextWindow: 8_192, vision: false, ...all, json_mode: false }],
    ["gpt-3.5-turbo", { contextWindow: 16_385, vision: false, ...all }],
    ["o1-mini", { contextWindow: 128_000, vision: false, ...all }],
    ["o1", { contextWindow: 200_000, vision: true, ...all }],
    ["o3", { contextWindow: 200_000, vision: true, ...all }],
    ["o4-mini", { contextWindow: 200_000, vision: true, ...all }],
    ["claude", { contextWindow: 200_000, vision: true, ...all }],
    ["gemini-1.5", { contextWindow: 1_000_000, vision: true, ...all }],
    ["gemini", { contextWindow: 1_000_000, vision: true, ...all }],
    ["llama3", { contextWindow: 8_192, vision: false, ...all }],
    ["mistral", { contextWindow: 32_768, vision: false, ...all }],
  ] as [string, Capabilities][]
).sort((a, b) => b[0].length - a[0].length);

export function capabilitiesOf(model: string | undefined): Capabilities {
  if (!model) return { ...UNKNOWN_MODEL };
  const lower = model.toLowerCase();
  const hit = known.find(([prefix]) => lower.startsWith(prefix));
  return { ...(hit ? hit[1] : UNKNOWN_MODEL) };
}

const none = { type: "object", properties: {} } as const;

export const capabilityTools: ToolSpec[] = [
  {
    name: "get_capabilities",
    description: "The capabilities of the agent's model: contextWindow, vision, toolCalling, streaming, json_mode.",
    tier: "A",
    parameters: none,
    async run(_args, ctx) {
      return { ...capabilitiesOf((await agentOf(ctx))?.model) };
    },
  },
  {
    name: "check_vision_support",
    description: "Whether the agent's model takes images (true or false).",
    tier: "A",
    parameters: none,
    async run(_args, ctx) {
      return String(capabilitiesOf((await agentOf(ctx))?.model).vision);
    },
  },
  {
    name: "get_context_window",
    description: "The context window of the agent's model, in tokens.",
    tier: "A",
    parameters: none,
    async run(_args, ctx) {
      return String(capabilitiesOf((await agentOf(ctx))?.model).contextWindow);
    },
  },
];
