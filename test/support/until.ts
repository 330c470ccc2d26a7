// The one way tests wait for something asynchronous: poll a condition until it holds, so a test
// waits exactly as long as the system needs and fails naming what never happened.

export interface UntilOptions {
  /**
   * How long before giving up (default 60 s). Generous, since CI shares two cores between several
   * suites and a PostgreSQL under that load can stall for seconds (a loaded run once waited more
   * than 30 s for an outbox event); a condition that holds ends the wait at once, so only a failing
   * test waits this long.
   */
  timeoutMs?: number;
  intervalMs?: number;
}

type Truthy<T> = Exclude<T, false | null | undefined | 0 | "">;

/**
 * Calls `probe` until it answers a truthy value and answers that value (so a probe can return the
 * rows it waited for); throws "gave up waiting for <what>" once `timeoutMs` has passed.
 */
export async function until<T>(probe: () => T | Promise<T>, what: string, options: UntilOptions = {}): Promise<Truthy<T>> {
  const { timeoutMs = 60_000, intervalMs = 25 } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as Truthy<T>;
    if (Date.now() >= deadline) throw new Error(`gave up waiting for ${what} (${timeoutMs} ms)`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
