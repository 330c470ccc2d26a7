// Device protection (interface: shared/spec/protection-api.md), as a module the mesh can host. Its
// front listens on :8081 with snake_case JSON and `{ error, message }` errors; its contracts and
// handlers arrive with the protection issues, so every path answers 404 in the front's style today.
import { z } from "zod";
import { ErrorStyle, JsonNaming } from "../../gen/meshwork/api/v1/options_pb.js";
import { setting } from "../runtime/config/index.js";
import { defineModule } from "../runtime/module/index.js";

export const protectionSettings = z.object({
  services: z.object({
    protection: z.object({
      address: setting.url({
        protocols: ["http:"],
        default: "http://127.0.0.1:9090",
        description: "Where a gateway-only process reaches the device protection service (gRPC over HTTP/2).",
      }),
    }),
  }),
  fronts: z.object({
    protection: z.object({
      port: setting.port({ default: 8081, description: "Port of the device protection REST front (/v1)." }),
    }),
  }),
});

export const protectionModule = defineModule({
  name: "protection",
  title: "device protection",
  settings: protectionSettings,
  renamedSettings: { "Gateway:Protection:Port": "Fronts:Protection:Port" },
  services: [],
  database: { name: "protection", entities: [], migrations: [] },
  streams: [],
  front: {
    name: "protection",
    title: "device protection REST front (/v1)",
    port: (settings) => settings.fronts.protection.port,
    errorStyle: ErrorStyle.ERROR_MESSAGE,
    jsonNaming: JsonNaming.PROTO_NAME,
  },
  address: (settings) => settings.services.protection.address,
  // Bearer JWTs arrive with accounts and tokens; until then there is no operation to guard.
  auth: () => ({}),
  async start() {
    return { services: [] };
  },
});
