// Load generators of the ingest benchmark. REST: autocannon POSTing one observation per request
// to /api/observations/ingest, each body built as the request goes out (the next fix of the next
// device, round robin, so every observedAt of a device is distinct and in order). Bulk: closed
// loops calling BatchIngestObservations over gRPC (ingest-bulk-client.ts), each loop owning its own
// devices, as separate feeds would.
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import type { BulkIngestClient } from "./ingest-bulk-client.js";
import type { Fix, Fleet } from "./ingest-fleet.js";

// autocannon ships no types; this is the slice used here (loaded without the shared declaration file).
interface AutocannonRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  setupRequest?: (request: AutocannonRequest) => AutocannonRequest;
  onResponse?: (status: number, body: string) => void;
}
interface AutocannonOptions {
  url: string;
  connections: number;
  pipelining: number;
  duration: number;
  timeout: number;
  requests: AutocannonRequest[];
}
interface AutocannonResult {
  errors: number;
  timeouts: number;
}
interface AutocannonInstance extends PromiseLike<AutocannonResult> {
  on(event: "start", listener: () => void): this;
  on(event: "response", listener: (client: unknown, statusCode: number) => void): this;
}
const autocannon = createRequire(import.meta.url)("autocannon") as (options: AutocannonOptions) => AutocannonInstance;

export interface IngestLoadResult {
  /** Observations stored (REST: 200 answers; bulk: the calls' accepted counts). */
  accepted: number;
  /** Refused, duplicate or failed observations and failed calls. */
  failed: number;
  elapsedMs: number;
  /** The first failure, to show what went wrong. */
  firstFailure?: string;
}

export interface RestLoadOptions {
  connections: number;
  durationMs: number;
}

/** `connections` keep-alive HTTP/1.1 connections, one request in flight on each. */
export async function restLoad(gatewayUrl: string, fleet: Fleet, options: RestLoadOptions): Promise<IngestLoadResult> {
  let cursor = 0;
  let firstFailure: string | undefined;
  const nextBody = (): string => {
    const fix = fleet.next(cursor);
    cursor = (cursor + 1) % fleet.size;
    return JSON.stringify(restBody(fix));
  };
  const request: AutocannonRequest = {
    method: "POST",
    path: "/api/observations/ingest",
    headers: { "content-type": "application/json" },
    setupRequest: (req) => ({ ...req, body: nextBody() }),
    onResponse: (status, body) => {
      if (status !== 200) firstFailure ??= `${status} ${body.slice(0, 300)}`;
    },
  };
  let started = 0;
  let accepted = 0;
  let failed = 0;
  const instance = autocannon({
    url: gatewayUrl,
    connections: options.connections,
    pipelining: 1,
    duration: options.durationMs / 1000,
    timeout: 10,
    requests: [request],
  });
  instance.on("start", () => (started = performance.now()));
  instance.on("response", (_client, statusCode) => {
    if (statusCode === 200) accepted++;
    else failed++;
  });
  const result = await instance;
  const elapsedMs = performance.now() - (started || performance.now());
  failed += result.errors + result.timeouts;
  return { accepted, failed, elapsedMs, ...(firstFailure ? { firstFailure } : {}) };
}

/** The documented ingest body: the device names itself by identifier, as devices do. */
function restBody(fix: Fix) {
  return {
    deviceIdentifier: fix.deviceIdentifier,
    observedAt: new Date(fix.observedAtMs).toISOString(),
    latitude: fix.latitude,
    longitude: fix.longitude,
    speedKmh: fix.speedKmh,
    headingDegrees: fix.headingDegrees,
    accuracyMeters: fix.accuracyMeters,
  };
}

export interface BulkLoadOptions {
  /** Concurrent callers, each with its own share of the devices. */
  callers: number;
  batchSize: number;
  durationMs: number;
}

/** `callers` closed loops of BatchIngestObservations until the window ends; calls in flight finish. */
export async function bulkLoad(client: BulkIngestClient, fleet: Fleet, options: BulkLoadOptions): Promise<IngestLoadResult> {
  const started = performance.now();
  const end = started + options.durationMs;
  let accepted = 0;
  let failed = 0;
  let firstFailure: string | undefined;
  const caller = async (k: number): Promise<void> => {
    const mine: number[] = [];
    for (let i = k; i < fleet.size; i += options.callers) mine.push(i);
    let cursor = 0;
    while (performance.now() < end) {
      const fixes: Fix[] = [];
      for (let n = 0; n < options.batchSize; n++) {
        fixes.push(fleet.next(mine[cursor]!));
        cursor = (cursor + 1) % mine.length;
      }
      try {
        const res = await client.batchIngest(fixes);
        accepted += res.accepted;
        const refused = options.batchSize - res.accepted;
        failed += refused;
        if (refused > 0)
          firstFailure ??= `accepted ${res.accepted} of ${options.batchSize}: ${JSON.stringify(res.rejected.slice(0, 3))}, duplicates ${res.duplicates}`;
      } catch (err) {
        failed += options.batchSize;
        firstFailure ??= String(err);
      }
    }
  };
  await Promise.all(Array.from({ length: options.callers }, (_, k) => caller(k)));
  return { accepted, failed, elapsedMs: performance.now() - started, ...(firstFailure ? { firstFailure } : {}) };
}
