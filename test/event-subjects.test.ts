// Every event message in every events.proto states its subject in the contract, as
// `<service>.v1.<entity>.<past-tense verb>`, and the subject lies in a stream of the module that
// publishes it, so no event can be recorded that the bus would refuse.
import type { DescFile } from "@bufbuild/protobuf";
import test from "ava";
import { readdir } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { file_tracking_v1_events } from "../gen/tracking/v1/events_pb.js";
import { modules as allModules } from "../services/registry.js";
import { eventSubjectPattern, subjectMatches, subjectOf } from "../services/runtime/bus/index.js";
import { subjects, trackingEvents } from "../services/tracking/events/subjects.js";

const gen = fileURLToPath(new URL("../gen/", import.meta.url));

async function eventFiles(): Promise<{ path: string; file: DescFile }[]> {
  const found: { path: string; file: DescFile }[] = [];
  for (const entry of await readdir(gen, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.name !== "events_pb.ts") continue;
    const path = join(entry.parentPath, entry.name);
    const exports = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
    const file = Object.entries(exports).find(([name]) => name.startsWith("file_"))?.[1] as DescFile | undefined;
    if (file) found.push({ path: relative(gen, path), file });
  }
  return found;
}

// Past tense: the event says what happened ("recorded", "test_requested"), not what to do. One
// state reached is allowed: "update_available", the name the agent gateway's interface gives.
const pastTense = /(ed|_sent|_built|_held|_run|_set|_reset|_lost|_available)$/;

test("every event message has a subject in its module's stream", async (t) => {
  const files = await eventFiles();
  t.true(
    files.some((f) => f.path === "tracking/v1/events_pb.ts"),
    "the tracking events are among them",
  );
  for (const { path, file } of files) {
    t.true(file.messages.length > 0, `${path} declares events`);
    const service = file.proto.package.split(".")[0]!;
    const module = allModules.find((m) => m.name === service);
    t.truthy(module, `${path}: a module named ${service} publishes its events`);
    for (const message of file.messages) {
      const subject = subjectOf(message);
      const [, subjectService, , verb] = eventSubjectPattern.exec(subject) ?? [];
      t.is(subjectService, service, `${message.typeName}: ${subject} names its own service`);
      t.regex(verb ?? "", pastTense, `${message.typeName}: ${subject} ends in a past-tense verb`);
      t.true(
        module?.streams.some((stream) => stream.subjects.some((pattern) => subjectMatches(pattern, subject))) ?? false,
        `${message.typeName}: ${subject} is inside a stream of the ${service} module`,
      );
    }
    const all = file.messages.map(subjectOf);
    t.is(new Set(all).size, all.length, `${path}: no two events share a subject`);
  }
});

test("the tracking subjects keep their names and cover every tracking event", (t) => {
  t.is(subjects.observationRecorded, "tracking.v1.observation.recorded");
  t.is(subjects.breachDetected, "tracking.v1.breach.detected");
  t.is(subjects.speedAlertRaised, "tracking.v1.speed_alert.raised");
  t.is(subjects.integrationFeedDeleted, "tracking.v1.integration_feed.deleted");
  t.is(subjects.webhookTestRequested, "tracking.v1.webhook.test_requested");
  for (const [name, schema] of Object.entries(trackingEvents)) {
    const [, , entity, verb] = eventSubjectPattern.exec(subjectOf(schema))!;
    const camel = `${entity}_${verb}`.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    t.is(name, camel, `${schema.typeName} is named for its subject`);
  }
  t.deepEqual(
    new Set(Object.values(trackingEvents)),
    new Set(file_tracking_v1_events.messages),
    "every message of tracking/v1/events.proto, each once",
  );
  t.is(Object.keys(trackingEvents).length, file_tracking_v1_events.messages.length);
});

test("a message without the option is refused, naming it", (t) => {
  t.throws(() => subjectOf(trackingEvents.assetCreated.fields[2]!.message!), {
    message: /tracking\.v1\.Asset is not an event message/,
  });
});
