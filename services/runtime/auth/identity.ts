// Who is calling, for the length of one call: set by the auth interceptor, read by handlers (and
// whatever they call) through currentIdentity() without passing it down by hand.
import { AsyncLocalStorage } from "node:async_hooks";
import { createContextKey } from "@connectrpc/connect";
import { requestContext } from "../host/request-context.js";

export interface Identity {
  /** True when the call carried a valid credential. */
  readonly authenticated: boolean;
  /** The credential's configured name (an API key's Name); undefined when anonymous. */
  readonly name?: string;
  /** The credential's role; undefined when anonymous. */
  readonly role?: string;
  /** How the caller proved who it is; undefined when anonymous. */
  readonly scheme?: "api-key" | "bearer";
}

export interface CallerContext {
  readonly identity: Identity;
  /**
   * A credential was sent but not recognised. Operations open to anyone ignore it (health must
   * answer a probe whatever it sends); an operation that reports identity refuses the call.
   */
  readonly rejectedCredential?: "api-key" | "bearer";
}

export const anonymous: Identity = Object.freeze({ authenticated: false });

const anonymousCaller: CallerContext = Object.freeze({ identity: anonymous });

/**
 * Where the caller lives for the call: on the request context's values when the request-context
 * interceptor runs first (as in every Meshwork host, so no extra AsyncLocalStorage is enabled),
 * otherwise in this store of its own.
 */
export const callerContext = new AsyncLocalStorage<CallerContext>();
export const callerSlot = Symbol("meshwork caller");

/** Runs `fn` with `caller` as the current caller. */
export function runAsCaller<R>(caller: CallerContext, fn: () => R): R {
  const request = requestContext.getStore();
  // The slot only when no store of this file's own is active (currentCaller() looks there first,
  // so the innermost caller always wins), and for the first caller of the request or the same
  // one again (every pull of a stream runs through here).
  if (request && callerContext.getStore() === undefined) {
    const current = request.values.get(callerSlot);
    if (current === undefined) request.values.set(callerSlot, caller);
    if (current === undefined || current === caller) return fn();
  }
  return callerContext.run(caller, fn);
}

/** The same caller as a Connect context value, for handlers that prefer `ctx.values`. */
export const callerKey = createContextKey<CallerContext>(anonymousCaller, { description: "meshwork caller" });

/** The caller of the call being handled; anonymous outside any call. */
export function currentCaller(): CallerContext {
  return callerContext.getStore() ?? (requestContext.getStore()?.values.get(callerSlot) as CallerContext | undefined) ?? anonymousCaller;
}

/** The identity of the caller of the call being handled; anonymous outside any call. */
export function currentIdentity(): Identity {
  return currentCaller().identity;
}
