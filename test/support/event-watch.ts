// Watching the events a mesh publishes, from now on and in order: through the mesh's own bus, or
// through a plain `nats` JetStream consumer (a client written by others) when NATS_URL is set.
import { connect, DeliverPolicy } from "nats";
import type { BusMessage } from "../../services/runtime/bus/index.js";
import { realInfra } from "./real-infra.js";
import type { TestMesh } from "./start-mesh.js";

export interface SeenEvent {
  subject: string;
  /** Nats-Msg-Id: the event id. */
  msgId: string | undefined;
  data: Uint8Array;
}

export interface EventWatch<T> {
  /** Grows as events arrive. */
  seen: T[];
  stop(): Promise<void>;
}

// One subject pattern, not a list: a list of filter subjects needs NATS 2.10, and CI's server may be older.

/** Events under `filter` as the mesh's bus delivers them. */
export async function watchBus(mesh: TestMesh, filter = "tracking.v1.>", stream = "TRACKING"): Promise<EventWatch<BusMessage>> {
  const seen: BusMessage[] = [];
  const sub = await mesh.bus!.subscribe({ stream, filterSubjects: [filter] }, (m) => {
    seen.push(m);
  });
  return { seen, stop: () => sub.stop() };
}

/** Events under `filter` as a plain JetStream consumer reads them when NATS_URL is set; on the embedded defaults, from the mesh's in-process bus. */
export async function watchStream(mesh: TestMesh, filter = "tracking.v1.>", stream = "TRACKING"): Promise<EventWatch<SeenEvent>> {
  const natsUrl = realInfra().natsUrl;
  const seen: SeenEvent[] = [];
  if (!natsUrl) {
    const sub = await mesh.bus!.subscribe({ stream, filterSubjects: [filter] }, (m) => {
      seen.push({ subject: m.subject, msgId: m.id, data: m.data });
    });
    return { seen, stop: () => sub.stop() };
  }
  const nc = await connect({ servers: natsUrl });
  const consumer = await nc.jetstream().consumers.get(stream, { filterSubjects: filter, deliver_policy: DeliverPolicy.New });
  const messages = await consumer.consume();
  void (async () => {
    for await (const m of messages) seen.push({ subject: m.subject, msgId: m.headers?.get("Nats-Msg-Id"), data: m.data });
  })();
  return {
    seen,
    async stop() {
      await messages.stop();
      await nc.close();
    },
  };
}
