// The agent gateway (interface: shared/spec/agent-gateway-api.md), as a module the mesh can host.
// Its front listens on Gateway:Server:Port (18789) with `{ error, message }` errors; agents,
// providers and hubs arrive with the agent gateway issues, so every path answers 404 today.
import { z } from "zod";
import { ErrorStyle, JsonNaming } from "../../gen/meshwork/api/v1/options_pb.js";
import { setting } from "../runtime/config/index.js";
import { defineModule } from "../runtime/module/index.js";

export const agentsSettings = z.object({
  services: z.object({
    agents: z.object({
      address: setting.url({
        protocols: ["http:"],
        default: "http://127.0.0.1:9090",
        description: "Where a gateway-only process reaches the agent gateway service (gRPC over HTTP/2).",
      }),
    }),
  }),
  gateway: z.object({
    server: z.object({
      port: setting.port({ default: 18789, description: "Port of the agent gateway's REST front, hubs and health probes." }),
    }),
  }),
});

export const agentsModule = defineModule({
  name: "agents",
  title: "agent gateway",
  settings: agentsSettings,
  renamedSettings: { "Gateway:Agents:Port": "Gateway:Server:Port" },
  services: [],
  database: { name: "agents", entities: [], migrations: [] },
  streams: [],
  front: {
    name: "agents",
    title: "agent gateway REST front",
    port: (settings) => settings.gateway.server.port,
    errorStyle: ErrorStyle.ERROR_MESSAGE,
    jsonNaming: JsonNaming.LOWER_CAMEL,
  },
  address: (settings) => settings.services.agents.address,
  // X-API-Key with User < Operator < Admin (Gateway:Auth:*) arrives with the agent gateway's rpcs.
  auth: () => ({}),
  async start() {
    return { services: [] };
  },
});
