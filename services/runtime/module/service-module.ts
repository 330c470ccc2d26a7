// The contract between a bounded context (services/<name>) and the process that hosts it: what it
// stores, which streams it publishes on, which RPC services it serves and which front shows them.
import type { DescService } from "@bufbuild/protobuf";
import type { Logger } from "pino";
import type { EventBus, StreamDefinition } from "../bus/index.js";
import type { MeshworkConfig } from "../config/index.js";
import type { Database, DatabaseModule } from "../database/index.js";
import type { ServiceRegistration } from "../host/index.js";

export interface ModuleDeps {
  config: MeshworkConfig;
  db: Database;
  bus: EventBus;
  /** Wakes the outbox relay after a commit that recorded events. */
  outbox: { notify(): void };
  logger: Logger;
}

export interface ServiceModule {
  /** Also the name used on the command line: `meshwork serve <name>`. */
  name: string;
  /** The RPC services, read by gateways even when the implementation runs elsewhere. */
  services: readonly DescService[];
  database: DatabaseModule;
  streams: readonly StreamDefinition[];
  /** The REST front that exposes these services (see services/fronts.ts). */
  front: {
    name: "tracking" | "protection" | "agents";
    /** Where a gateway-only process reaches the services. */
    address(config: MeshworkConfig): string;
  };
  /** Builds the handlers (and whatever background work they need, e.g. bus subscriptions). */
  start(deps: ModuleDeps): Promise<ModuleRuntime>;
}

export interface ModuleRuntime {
  services: ServiceRegistration[];
  /** Ends the module's background work; called before the database and bus close. */
  stop(): Promise<void>;
}
