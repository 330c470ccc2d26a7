// Recording observations: the pure checks, then chunked transactions (see record-chunk.ts), with
// a retry when PostgreSQL reports a transient conflict. Single records throw ConnectErrors that
// name the field; batches report refusals by index.
//
// Single records that arrive while another is being written share the next transaction (group
// commit): one chunk of all that waited, each answered with its own outcome, its events carrying
// its own request's trace context. A lone record waits for nothing. If a shared chunk fails for a
// reason that is not a transient conflict, it runs again in halves until the failing record stands
// alone, so one bad record never fails the others.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { context as otelContext, type Context } from "@opentelemetry/api";
import { BadRequestSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { invalidArgument, unprocessable } from "../../runtime/errors/index.js";
import type { TrackingDeps } from "../deps.js";
import { checkObservation } from "../domain/observation-rules.js";
import type { CheckedObservation, DeviceReference, ObservationInputLike } from "../domain/observation-types.js";
import type { FenceIndex } from "./fence-index.js";
import { recordChunk, type ChunkContext, type ChunkItem, type ChunkOutcome } from "./record-chunk.js";
import type { BatchRecordOptions, BatchRecordResult, BatchRejection, RecordOptions, RecordResult } from "./types.js";

/** Items per transaction: large enough to amortise round trips, small enough to keep locks short. */
export const chunkSize = 500;
const maxAttempts = 3;
/** Shared transactions of single records in flight at once (per source); more wait and join the next. */
const singleChunksInFlight = 2;
// Deadlock, serialization failure, and a foreign key that vanished under us (a fence or device
// deleted by another instance mid-chunk): running the chunk again sees the new state.
const transientCodes = new Set(["40P01", "40001", "23503"]);

export interface Recorder {
  record(input: ObservationInputLike, options: RecordOptions): Promise<RecordResult>;
  recordBatch(inputs: readonly ObservationInputLike[], options: BatchRecordOptions): Promise<BatchRecordResult>;
}

export function createRecorder(deps: Omit<TrackingDeps, "engine">, index: FenceIndex): Recorder {
  const context = (options: RecordOptions, loadDuplicates: boolean): ChunkContext => ({
    source: options.source,
    index,
    defaultThresholdKmh: deps.settings.tracking.defaultSpeedThresholdKmh,
    cooldownMs: deps.settings.tracking.speedAlertCooldownMinutes * 60_000,
    loadDuplicates,
  });

  async function run(items: ChunkItem[], ctx: ChunkContext): Promise<Map<number, ChunkOutcome>> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await deps.uow.run((tx) => recordChunk(tx, items, ctx));
      } catch (err) {
        if (attempt >= maxAttempts || !transientCodes.has(sqlState(err))) throw err;
        deps.logger.debug({ err, attempt }, "observation chunk hit a transient conflict; running it again");
      }
    }
  }

  // One queue per source: the source is written on every row of a chunk.
  const queues = new Map<string, GroupCommit>();
  const queueFor = (options: RecordOptions): GroupCommit => {
    let queue = queues.get(options.source);
    if (!queue) queues.set(options.source, (queue = new GroupCommit(run, context(options, true))));
    return queue;
  };

  return {
    async record(input, options) {
      const check = checkObservation(input, { now: new Date(), resolveIdentifier: options.resolveIdentifier, prefix: "observation." });
      if (check.malformed.length) throw invalidArgument(check.malformed);
      if (check.semantic.length || !check.value) throw unprocessable(check.semantic);
      const outcome = await queueFor(options).submit(check.value);
      switch (outcome.kind) {
        case "recorded":
          return { observation: outcome.observation, duplicate: false, speedAlerts: outcome.speedAlerts, breaches: outcome.breaches };
        case "duplicate":
          // Found by the unique index but gone by the time it was read back: only a concurrent delete of the device does that.
          if (!outcome.observation) throw unknownDevice(check.value.device, "observation.");
          return { observation: outcome.observation, duplicate: true, speedAlerts: [], breaches: [] };
        case "unknown-device":
          throw unknownDevice(check.value.device, "observation.");
      }
    },

    async recordBatch(inputs, options) {
      const offset = options.indexOffset ?? 0;
      const now = new Date();
      const result: BatchRecordResult = { accepted: 0, duplicates: 0, rejected: [], speedAlertsRaised: 0, breachesDetected: 0 };
      const valid: ChunkItem[] = [];
      const requestContext = otelContext.active();
      inputs.forEach((input, i) => {
        const check = checkObservation(input, { now, resolveIdentifier: options.resolveIdentifier, prefix: "" });
        if (check.value) valid.push({ index: offset + i, observation: check.value, context: requestContext });
        else for (const v of [...check.malformed, ...check.semantic]) result.rejected.push({ index: offset + i, ...v });
      });
      const ctx = context(options, false);
      // Chunks run one after another: a later chunk may hold newer fixes of the same devices.
      for (let start = 0; start < valid.length; start += chunkSize) {
        const chunk = valid.slice(start, start + chunkSize);
        const outcomes = await run(chunk, ctx);
        for (const item of chunk) {
          const outcome = outcomes.get(item.index)!;
          if (outcome.kind === "recorded") {
            result.accepted++;
            result.speedAlertsRaised += outcome.speedAlerts.length;
            result.breachesDetected += outcome.breaches.length;
          } else if (outcome.kind === "duplicate") result.duplicates++;
          else result.rejected.push(unknownDeviceRejection(item));
        }
      }
      result.rejected.sort((a, b) => a.index - b.index);
      return result;
    },
  };
}

interface Waiting {
  observation: CheckedObservation;
  context: Context;
  resolve(outcome: ChunkOutcome): void;
  reject(err: unknown): void;
}

/** Single records written together: whatever waits while a chunk is in flight forms the next one. */
export class GroupCommit {
  private queue: Waiting[] = [];
  private inFlight = 0;

  constructor(
    private readonly run: (items: ChunkItem[], ctx: ChunkContext) => Promise<Map<number, ChunkOutcome>>,
    private readonly ctx: ChunkContext,
  ) {}

  submit(observation: CheckedObservation): Promise<ChunkOutcome> {
    return new Promise<ChunkOutcome>((resolve, reject) => {
      this.queue.push({ observation, context: otelContext.active(), resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < singleChunksInFlight && this.queue.length) {
      const group = this.queue.splice(0, chunkSize);
      this.inFlight++;
      void this.write(group).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async write(group: Waiting[]): Promise<void> {
    const items = group.map((w, index) => ({ index, observation: w.observation, context: w.context }));
    try {
      const outcomes = await this.run(items, this.ctx);
      group.forEach((w, index) => w.resolve(outcomes.get(index)!));
    } catch (err) {
      if (group.length === 1) return group[0]!.reject(err);
      // Halves, in arrival order, until the record that cannot be written stands alone: it fails,
      // the others still share transactions (one bad record in n costs about 2·log2(n) more).
      const half = Math.ceil(group.length / 2);
      await this.write(group.slice(0, half));
      await this.write(group.slice(half));
    }
  }
}

function unknownDevice(ref: DeviceReference, prefix: string): ConnectError {
  const field = ref.kind === "id" ? `${prefix}device_id` : `${prefix}device_identifier`;
  const what = ref.kind === "id" ? `device ${ref.id}` : `a device with identifier '${ref.identifier.slice(0, 64)}'`;
  // NotFound with the field named, so the problem body's `errors` map points at it like a 400 does.
  const detail = create(BadRequestSchema, { fieldViolations: [{ field, description: "no such device" }] });
  return new ConnectError(`${what} not found`, Code.NotFound, undefined, [{ desc: BadRequestSchema, value: detail }]);
}

function unknownDeviceRejection(item: ChunkItem): BatchRejection {
  const field = item.observation.device.kind === "id" ? "device_id" : "device_identifier";
  return { index: item.index, field, description: "no such device" };
}

function sqlState(err: unknown): string {
  const e = err as { code?: unknown; sqlState?: unknown; cause?: { code?: unknown } } | null;
  const code = e?.code ?? e?.sqlState ?? e?.cause?.code;
  return typeof code === "string" ? code : "";
}
