// The agent gateway module's settings, whole: the service address, the front's sections
// (front-settings-schema.ts), the agents', the telemetry's, and the sections of settings.ts. Light
// on purpose: the configuration loader (and every CLI command that only reads settings) imports it
// without the module's implementation.
import { z } from "zod";
import { type SettingsOf, setting } from "../runtime/config/index.js";
import { gatewayFrontSettings } from "./front-settings-schema.js";
import { agentsCoreSections, gatewayAgentsSettings } from "./settings.js";
import { gatewayTelemetrySettings } from "./telemetry/telemetry-settings.js";

export const agentsSettings = z.object({
  services: z.object({
    agents: z.object({
      address: setting.url({
        protocols: ["http:"],
        list: true,
        default: "http://127.0.0.1:9090",
        description:
          "Where a gateway-only process reaches the agent gateway service (gRPC over HTTP/2); comma-separated for several instances: calls are balanced over them, and one refusing connections is skipped for 5 s.",
      }),
    }),
  }),
  gateway: z.object({
    ...gatewayFrontSettings,
    agents: gatewayAgentsSettings,
    telemetry: gatewayTelemetrySettings,
  }),
  ...agentsCoreSections,
});

export type AgentsSettings = SettingsOf<typeof agentsSettings>;

/** Keys of earlier releases, still read, with a warning naming their new key. */
export const agentsRenamedSettings = { "Gateway:Agents:Port": "Gateway:Server:Port" };
