// Turns through the worker pool (Workers:*). With Workers:Enabled the agents service does not run a
// turn itself: it publishes a job `{ jobId, agentId, message, replyTo }` (JSON, Nats-Msg-Id the job
// id) on `<StreamKey>.turns` of the JetStream stream Workers:StreamKey and waits for the reply on
// `replyTo`, a subject of its own (`<StreamKey>.replies.<instance>.<jobId>`) it follows with one
// ordered subscription per service process. `meshwork worker` processes pull the jobs one at a time
// through the durable consumer Workers:ConsumerGroup, which they share (each job goes to one of
// them), run the turn (recorded in the mesh database as any turn), publish the reply, and only then
// acknowledge the job: a worker that dies mid-turn leaves its job to be delivered again. A refusal
// (404, 409, 503 with Retry-After, 504) travels back as `{ error: { code, message, metadata } }`
// and is answered to the caller as if the turn ran in process. While no worker runs, jobs wait in
// the stream and callers wait for their replies (until they give up).
import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { EventBus, StreamDefinition } from "../../runtime/bus/index.js";
import { ConfigError } from "../../runtime/config/index.js";
import type { LoggerLike } from "../../runtime/logging/index.js";
import type { Worker } from "../../runtime/module/index.js";
import { checkMessageGiven } from "../agents/agents.js";
import { refusal } from "../agents/errors.js";
import type { TurnResult } from "../agents/turns.js";
import type { WorkersSettings } from "../settings.js";

/** Jobs and replies stay a day at most; the durable consumer keeps its own position. */
const RETENTION_MS = 24 * 60 * 60 * 1000;

interface TurnJob {
  jobId: string;
  agentId: string;
  message: string;
  replyTo: string;
}

type TurnReply =
  | { jobId: string; result: TurnResult }
  | { jobId: string; error: { code: Code; message: string; metadata: Record<string, string> } };

function streamOf(settings: WorkersSettings): StreamDefinition {
  const key = settings.streamKey;
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(key)) {
    throw new ConfigError(
      `Invalid setting Workers:StreamKey = ${JSON.stringify(key)}: expected a JetStream stream name (letters, digits, '_' or '-', at most 64).`,
    );
  }
  return { name: key, subjects: [`${key}.turns`, `${key}.replies.>`], maxAgeMs: RETENTION_MS };
}

/** Workers need JetStream: the in-process bus reaches no worker process. */
export function checkWorkersBus(settings: WorkersSettings, bus: EventBus): void {
  if (bus.kind !== "nats") {
    throw new ConfigError(
      "Workers:Enabled needs NATS_URL / Nats:Url: turns are queued on a JetStream stream (Workers:StreamKey) for `meshwork worker` processes, which the in-process bus cannot reach.",
    );
  }
  streamOf(settings);
}

export interface TurnQueue {
  /** Queues the turn and answers its reply (or throws its refusal) once a worker has run it. */
  run(agentId: string, message: string, signal?: AbortSignal): Promise<TurnResult>;
  stop(): Promise<void>;
}

/** The service side: publishes turn jobs and hands each reply to the caller waiting for it. */
export async function startTurnQueue(deps: { bus: EventBus; settings: WorkersSettings; logger: LoggerLike }): Promise<TurnQueue> {
  const { bus, settings } = deps;
  checkWorkersBus(settings, bus);
  const stream = streamOf(settings);
  await bus.ensureStreams([stream]);
  const instance = randomUUID();
  const waiting = new Map<string, { resolve: (reply: TurnReply) => void; reject: (error: Error) => void }>();
  const replies = await bus.subscribe({ stream: stream.name, filterSubjects: [`${stream.name}.replies.${instance}.>`] }, (m) => {
    let reply: TurnReply;
    try {
      reply = JSON.parse(new TextDecoder().decode(m.data)) as TurnReply;
    } catch {
      deps.logger.warn({ subject: m.subject }, "unreadable turn reply ignored");
      return;
    }
    const waiter = waiting.get(reply.jobId);
    waiting.delete(reply.jobId);
    waiter?.resolve(reply);
  });
  return {
    async run(agentId, message, signal) {
      // An empty message is refused here, not after waiting for a worker.
      checkMessageGiven(message);
      const jobId = randomUUID();
      const job: TurnJob = { jobId, agentId, message, replyTo: `${stream.name}.replies.${instance}.${jobId}` };
      const answered = new Promise<TurnReply>((resolve, reject) => waiting.set(jobId, { resolve, reject }));
      const onAbort = () => waiting.get(jobId)?.reject(refusal(Code.Canceled, "the turn was cancelled"));
      signal?.addEventListener("abort", onAbort, { once: true });
      try {
        await bus.publish(`${stream.name}.turns`, new TextEncoder().encode(JSON.stringify(job)), { id: jobId });
        const reply = await answered;
        if ("error" in reply) throw refusal(reply.error.code, reply.error.message, reply.error.metadata);
        return reply.result;
      } finally {
        waiting.delete(jobId);
        signal?.removeEventListener("abort", onAbort);
      }
    },
    async stop() {
      await replies.stop();
      for (const [, waiter] of waiting)
        waiter.reject(refusal(Code.Unavailable, "the agent gateway is shutting down", { "retry-after": "5" }));
      waiting.clear();
    },
  };
}

/** The worker side (`meshwork worker`): pulls turn jobs through Workers:ConsumerGroup and runs them. */
export async function startTurnWorker(deps: {
  bus: EventBus;
  settings: WorkersSettings;
  logger: LoggerLike;
  run(agentId: string, message: string): Promise<TurnResult>;
}): Promise<Worker> {
  const { bus, settings, logger } = deps;
  const stream = streamOf(settings);
  await bus.ensureStreams([stream]);
  const consumer = await bus.consume(
    { stream: stream.name, durable: settings.consumerGroup, filterSubjects: [`${stream.name}.turns`], oneAtATime: true },
    async (m) => {
      let job: TurnJob;
      try {
        job = JSON.parse(new TextDecoder().decode(m.data)) as TurnJob;
        if (typeof job.jobId !== "string" || typeof job.agentId !== "string" || typeof job.replyTo !== "string") throw new Error();
        if (!job.replyTo.startsWith(`${stream.name}.replies.`)) throw new Error();
      } catch {
        // Nothing to answer and nothing a redelivery would fix: dropped (acknowledged).
        logger.warn({ subject: m.subject, seq: m.seq }, "unreadable turn job dropped");
        return;
      }
      let reply: TurnReply;
      try {
        reply = { jobId: job.jobId, result: await deps.run(job.agentId, String(job.message ?? "")) };
      } catch (error) {
        if (error instanceof ConnectError && error.code !== Code.Internal && error.code !== Code.Unknown) {
          const metadata: Record<string, string> = {};
          error.metadata.forEach((value, key) => {
            metadata[key] = value;
          });
          reply = { jobId: job.jobId, error: { code: error.code, message: error.rawMessage, metadata } };
        } else {
          logger.error({ agentId: job.agentId, error: error instanceof Error ? error.message : String(error) }, "queued turn failed");
          reply = { jobId: job.jobId, error: { code: Code.Internal, message: "the turn failed", metadata: {} } };
        }
      }
      // Published before the job is acknowledged (when this handler returns): a failure here redelivers the job.
      await bus.publish(job.replyTo, new TextEncoder().encode(JSON.stringify(reply)), { id: `${job.jobId}.reply` });
    },
  );
  logger.info({ stream: stream.name, consumer: settings.consumerGroup }, "turn worker pulling jobs");
  return { name: `turn worker (${stream.name}/${settings.consumerGroup})`, stop: () => consumer.stop() };
}
