// Asset changes leave the service as protobuf events through the outbox. With NATS_URL set the
// subscriber is a plain `nats` JetStream consumer; on the embedded defaults it is the in-process bus.
import { fromBinary } from "@bufbuild/protobuf";
import test from "ava";
import { AssetCreatedSchema, AssetDeletedSchema, AssetUpdatedSchema } from "../../gen/tracking/v1/events_pb.js";
import { type SeenEvent, watchStream } from "../support/event-watch.js";
import { startTestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

type Seen = SeenEvent;

async function restCreateUpdateDelete(base: string): Promise<string> {
  const created = await fetch(`${base}/api/assets`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "evented" }),
  });
  const { id } = (await created.json()) as { id: string };
  await fetch(`${base}/api/assets/${id}`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "evented 2" }),
  });
  await fetch(`${base}/api/assets/${id}`, { method: "DELETE" });
  return id;
}

function checkEvents(t: import("ava").ExecutionContext, seen: Seen[], id: string) {
  const mine = seen.filter((s) => {
    const schema = s.subject.endsWith("created")
      ? AssetCreatedSchema
      : s.subject.endsWith("updated")
        ? AssetUpdatedSchema
        : AssetDeletedSchema;
    return fromBinary(schema, s.data).asset?.id === id;
  });
  t.deepEqual(
    mine.map((s) => s.subject),
    ["tracking.v1.asset.created", "tracking.v1.asset.updated", "tracking.v1.asset.deleted"],
  );
  const created = fromBinary(AssetCreatedSchema, mine[0]!.data);
  t.is(created.asset?.name, "evented");
  t.is(mine[0]!.msgId, created.eventId, "Nats-Msg-Id is the event id");
  t.is(fromBinary(AssetUpdatedSchema, mine[1]!.data).asset?.name, "evented 2");
}

test("create, update and delete publish tracking.v1.asset.* events in order", async (t) => {
  const mesh = await startTestMesh();
  t.teardown(() => mesh.close());
  const { seen, stop } = await watchStream(mesh, "tracking.v1.asset.>");
  t.teardown(stop);

  const id = await restCreateUpdateDelete(mesh.frontUrl("tracking"));
  await mesh.drainOutbox();
  await until(
    () => seen.filter((s) => s.subject.startsWith("tracking.v1.asset.")).length >= 3 && seen.some((s) => s.subject.endsWith("deleted")),
    "three asset events",
  );
  checkEvents(t, seen, id);
});
