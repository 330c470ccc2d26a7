// Telemetry for a mesh process, from its loaded configuration: the runtime's Telemetry:* settings,
// the OTEL_* variables the loader kept, and the console span scopes the service modules declare.
import type { MeshConfig } from "./mesh-config.js";
import { modules as registered } from "./registry.js";
import type { ServiceModule } from "./runtime/module/index.js";
import { startTelemetry, type StartTelemetryOptions, type Telemetry } from "./runtime/telemetry/index.js";

export function startMeshTelemetry(
  config: MeshConfig,
  logger: StartTelemetryOptions["logger"],
  modules: readonly ServiceModule[] = registered,
): Promise<Telemetry> {
  const settings = config.runtime.telemetry;
  return startTelemetry({
    serviceName: settings.serviceName,
    serviceVersion: "0.1.0",
    exporter: settings.exporter,
    otlpProtocol: settings.otlpProtocol,
    endpoint: settings.endpoint,
    consoleSpans: settings.consoleSpans,
    consoleSpanScopes: modules.flatMap((m) => m.telemetry?.consoleSpanScopes ?? []),
    env: config.otelEnv,
    logger,
  });
}
