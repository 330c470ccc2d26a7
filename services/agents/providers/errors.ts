// How a provider call fails. Messages name the provider, the method, the path and the status:
// never a key, a token or the provider's own error text (which may echo what it was sent).

export type ProviderFailure = "unreachable" | "server_error" | "empty_reply" | "refused" | "unauthorized" | "bad_reply" | "no_credentials";

/** The provider failed after its retries: the turn goes on to the next provider ("provider failed"). */
export class ProviderError extends Error {
  override name = "ProviderError";
  constructor(
    readonly provider: string,
    readonly reason: ProviderFailure,
    message: string,
    /** The last HTTP status, undefined when none came. */
    readonly status?: number,
    /** HTTP attempts made. */
    readonly attempts = 1,
  ) {
    super(message);
  }
}

/** The caller aborted the call (cancel, turn timeout): not a provider failure. `cause` is the signal's reason. */
export class ProviderCancelledError extends Error {
  override name = "ProviderCancelledError";
  constructor(
    readonly provider: string,
    cause: unknown,
  ) {
    super(`the call to provider ${provider} was cancelled`, { cause });
  }
}

/** Every provider the turn could use failed or is waiting for a probe: the turn answers 503. */
export class AllProvidersFailedError extends Error {
  override name = "AllProvidersFailedError";
  constructor(
    /** The failure of each provider tried, in order; empty when none was available. */
    readonly failures: ProviderError[],
    /** Providers skipped because they are waiting for a successful probe. */
    readonly skipped: string[],
  ) {
    const tried = failures.map((f) => `${f.provider}: ${f.reason}`).join("; ");
    super(`no provider answered${tried ? ` (${tried})` : ""}${skipped.length ? `; unavailable until probed: ${skipped.join(", ")}` : ""}`);
  }
}

/** Inside a client: a failure worth another attempt after the backoff (5xx, a socket error). Never leaves the client. */
export class TransientProviderError extends Error {
  override name = "TransientProviderError";
  constructor(
    readonly reason: "unreachable" | "server_error",
    readonly detail: string,
    readonly status?: number,
  ) {
    super(detail);
  }
}
