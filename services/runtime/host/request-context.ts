// The per-request context (the request id) that follows a call through every await, so log lines
// can be stamped with it without passing it down by hand.
import { AsyncLocalStorage } from "node:async_hooks";

export const REQUEST_ID_HEADER = "x-request-id";

export interface RequestContext {
  readonly requestId: string;
  /**
   * Request-scoped values other interceptors attach (the caller's identity, for one), kept here so
   * a call needs one AsyncLocalStorage, not one per concern: each enabled store costs something
   * on every promise the process creates.
   */
  readonly values: Map<symbol, unknown>;
}

export const requestContext = new AsyncLocalStorage<RequestContext>();

/** The id of the request being handled, or undefined outside any request. */
export function getRequestId(): string | undefined {
  return requestContext.getStore()?.requestId;
}
