// Load generators for the benchmark: autocannon for HTTP/1.1, a bounded closed loop for RPC
// clients. Both keep every latency sample in float milliseconds (autocannon's own histogram
// rounds to whole milliseconds, too coarse for sub-millisecond budgets).
import autocannon, { type AutocannonRequest } from "autocannon";
import { performance } from "node:perf_hooks";

export interface LoadResult {
  /** Completed successful requests in the measured window. */
  readonly requests: number;
  readonly elapsedMs: number;
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  /** Failed calls, non-2xx answers and timeouts together. */
  readonly errors: number;
}

/** `onMeasureStart` (both generators) runs between the warm-up and the measured window. */
export interface LoadOptions {
  readonly connections: number;
  readonly warmupMs: number;
  readonly durationMs: number;
}

/** What each request is, when not a plain GET of the URL: `next()` makes every request anew (e.g. another device). */
export interface HttpRequestShape {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  readonly next?: () => { path?: string; headers?: Record<string, string>; body?: string };
}

/** Keep-alive HTTP/1.1 requests (GETs unless `shape` says otherwise) on `connections` sockets, one in flight on each. */
export async function httpLoad(
  url: string,
  options: LoadOptions,
  onMeasureStart?: () => void,
  shape?: HttpRequestShape,
): Promise<LoadResult> {
  if (options.warmupMs > 0) await runAutocannon(url, options.connections, options.warmupMs, undefined, shape);
  onMeasureStart?.();
  const samples: number[] = [];
  const result = await runAutocannon(url, options.connections, options.durationMs, samples, shape);
  return summarise(samples, result.elapsedMs, result.errors);
}

async function runAutocannon(
  url: string,
  connections: number,
  durationMs: number,
  samples: number[] | undefined,
  shape: HttpRequestShape | undefined,
): Promise<{ elapsedMs: number; errors: number }> {
  let started = 0;
  const next = shape?.next;
  const instance = autocannon({
    url,
    connections,
    pipelining: 1,
    duration: durationMs / 1000,
    timeout: 10,
    ...(shape?.method ? { method: shape.method } : {}),
    ...(shape?.headers ? { headers: shape.headers } : {}),
    ...(shape?.body !== undefined ? { body: shape.body } : {}),
    ...(next ? { requests: [{ setupRequest: (request: AutocannonRequest) => ({ ...request, ...next() }) }] } : {}),
  });
  instance.on("start", () => (started = performance.now()));
  let errors = 0;
  instance.on("response", (_client, statusCode, _bytes, responseTime) => {
    if (statusCode >= 200 && statusCode < 300) samples?.push(responseTime);
    else errors++;
  });
  const result = await instance;
  const elapsedMs = performance.now() - (started || performance.now());
  return { elapsedMs, errors: errors + result.errors + result.timeouts };
}

/**
 * `concurrency` loops, each awaiting one call at a time (a closed loop, like autocannon's
 * connections), until the window ends. Calls already in flight at the end still finish.
 */
export async function closedLoop(call: () => Promise<unknown>, options: LoadOptions, onMeasureStart?: () => void): Promise<LoadResult> {
  if (options.warmupMs > 0) await loop(call, options.connections, options.warmupMs, undefined);
  onMeasureStart?.();
  const samples: number[] = [];
  const { elapsedMs, errors } = await loop(call, options.connections, options.durationMs, samples);
  return summarise(samples, elapsedMs, errors);
}

async function loop(
  call: () => Promise<unknown>,
  concurrency: number,
  durationMs: number,
  samples: number[] | undefined,
): Promise<{ elapsedMs: number; errors: number }> {
  const started = performance.now();
  const end = started + durationMs;
  let errors = 0;
  let firstError: unknown;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        await call();
        samples?.push(performance.now() - t0);
      } catch (error) {
        errors++;
        firstError ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  if (firstError !== undefined && errors > 0) {
    process.stderr.write(`bench: ${errors} failed calls, first: ${String(firstError)}\n`);
  }
  return { elapsedMs: performance.now() - started, errors };
}

function summarise(samples: number[], elapsedMs: number, errors: number): LoadResult {
  const sorted = Float64Array.from(samples).sort();
  return {
    requests: sorted.length,
    elapsedMs,
    rps: (sorted.length / elapsedMs) * 1000,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    errors,
  };
}

/** Nearest-rank percentile of sorted samples; NaN when there are none. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}
