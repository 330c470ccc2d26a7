// What a bounded context hands the host: a service descriptor and its implementation.
import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";

export interface ServiceRegistration {
  readonly service: DescService;
  /** The implementation, typed loosely so one array holds several services; defineService() checks it. */
  readonly impl: object;
}

/** A complete implementation of `service`: a forgotten rpc fails the type check. */
export function defineService<S extends DescService>(service: S, impl: ServiceImpl<S>): ServiceRegistration {
  return { service, impl };
}

/** Part of an implementation; the methods left out answer Unimplemented. For tests and fixtures. */
export function definePartialService<S extends DescService>(service: S, impl: Partial<ServiceImpl<S>>): ServiceRegistration {
  return { service, impl };
}
