// What a bounded context hands the host: a service descriptor and (part of) its implementation.
import type { DescService } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";

export interface ServiceRegistration {
  readonly service: DescService;
  /**
   * A Partial<ServiceImpl> of `service`; methods left out answer Unimplemented. Typed loosely so
   * one array holds several services; defineService() checks an implementation against its
   * descriptor.
   */
  readonly impl: object;
}

export function defineService<S extends DescService>(service: S, impl: Partial<ServiceImpl<S>>): ServiceRegistration {
  return { service, impl };
}
