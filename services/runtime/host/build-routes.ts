// Turns service registrations into Connect routes, adding the standard gRPC health and
// reflection services. The result works for a network server and for createRouterTransport.
import type { DescFile, DescService } from "@bufbuild/protobuf";
import {
  file_google_protobuf_any,
  file_google_protobuf_api,
  file_google_protobuf_compiler_plugin,
  file_google_protobuf_descriptor,
  file_google_protobuf_duration,
  file_google_protobuf_empty,
  file_google_protobuf_field_mask,
  file_google_protobuf_source_context,
  file_google_protobuf_struct,
  file_google_protobuf_timestamp,
  file_google_protobuf_type,
  file_google_protobuf_wrappers,
} from "@bufbuild/protobuf/wkt";
import type { ConnectRouter, Interceptor, ServiceImpl } from "@connectrpc/connect";
import { Health, file_grpc_health_v1_health } from "../../../gen/grpc/health/v1/health_pb.js";
import * as reflectionV1 from "../../../gen/grpc/reflection/v1/reflection_pb.js";
import * as reflectionV1alpha from "../../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { createHealthRegistry, type HealthRegistry } from "./health/health-registry.js";
import { createHealthService } from "./health/health-service.js";
import { createDescriptorIndex } from "./reflection/descriptor-index.js";
import { createReflectionV1alphaService, createReflectionV1Service } from "./reflection/reflection-service.js";
import type { ServiceRegistration } from "./service-registration.js";

// Clients ask for well-known types by name even when no served file imports them.
const wellKnownFiles: readonly DescFile[] = [
  file_google_protobuf_any,
  file_google_protobuf_api,
  file_google_protobuf_compiler_plugin,
  file_google_protobuf_descriptor,
  file_google_protobuf_duration,
  file_google_protobuf_empty,
  file_google_protobuf_field_mask,
  file_google_protobuf_source_context,
  file_google_protobuf_struct,
  file_google_protobuf_timestamp,
  file_google_protobuf_type,
  file_google_protobuf_wrappers,
];

export interface BuildRoutesOptions {
  readonly services: readonly ServiceRegistration[];
  /** Applied to the registered services only, not to health and reflection (probes are noise). */
  readonly interceptors?: readonly Interceptor[];
  /** Share a registry across several route sets; by default each gets its own. */
  readonly health?: HealthRegistry;
  /** More files reflection should answer for, e.g. event payloads no service method uses. */
  readonly reflectionFiles?: readonly DescFile[];
}

export interface ServiceRoutes {
  (router: ConnectRouter): void;
  readonly health: HealthRegistry;
  /** The registered services, without health and reflection. */
  readonly serviceNames: readonly string[];
}

export function buildRoutes(options: BuildRoutesOptions): ServiceRoutes {
  const serviceNames = options.services.map((registration) => registration.service.typeName);
  const duplicate = serviceNames.find((name, i) => serviceNames.indexOf(name) !== i);
  if (duplicate !== undefined) {
    throw new Error(`service ${duplicate} is registered twice`);
  }
  const health = options.health ?? createHealthRegistry();
  health.setStatus("", "SERVING");
  for (const name of serviceNames) {
    health.setStatus(name, "SERVING");
  }
  const index = createDescriptorIndex({
    files: [
      ...options.services.map((registration) => registration.service.file),
      file_grpc_health_v1_health,
      reflectionV1.file_grpc_reflection_v1_reflection,
      reflectionV1alpha.file_grpc_reflection_v1alpha_reflection,
      ...(options.reflectionFiles ?? []),
      ...wellKnownFiles,
    ],
    serviceNames: [...serviceNames, Health.typeName, reflectionV1.ServerReflection.typeName, reflectionV1alpha.ServerReflection.typeName],
  });
  const interceptors = [...(options.interceptors ?? [])];
  const healthService = createHealthService(health);
  const reflectionV1Service = createReflectionV1Service(index);
  const reflectionV1alphaService = createReflectionV1alphaService(index);

  const routes = (router: ConnectRouter): void => {
    for (const { service, impl } of options.services) {
      router.service(service, impl as Partial<ServiceImpl<DescService>>, { interceptors });
    }
    router.service(Health, healthService);
    router.service(reflectionV1.ServerReflection, reflectionV1Service);
    router.service(reflectionV1alpha.ServerReflection, reflectionV1alphaService);
  };
  return Object.assign(routes, { health, serviceNames });
}
