// The subject an event message travels on, read from its (meshwork.api.v1.event) option, so the
// contract states it once. Read at start-up by each module's event table: a message without the
// option fails there, not at the first publish.
import { getOption, hasOption, type DescFile, type DescMessage } from "@bufbuild/protobuf";
import { event } from "../../../gen/meshwork/api/v1/options_pb.js";
import { subjectMatches } from "./subject-match.js";
import type { StreamDefinition } from "./types.js";

/** `<service>.v1.<entity>.<past-tense verb>`: lower-case words joined by `_`. */
export const eventSubjectPattern = /^([a-z][a-z0-9]*)\.v1\.([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)$/;

const subjects = new WeakMap<DescMessage, string>();

/** The subject of an event message; throws when the message declares none or a malformed one. */
export function subjectOf(schema: DescMessage): string {
  let subject = subjects.get(schema);
  if (subject === undefined) {
    subject = hasOption(schema, event) ? getOption(schema, event).subject : "";
    if (subject === "") throw new Error(`${schema.typeName} is not an event message: it has no (meshwork.api.v1.event).subject option`);
    if (!eventSubjectPattern.test(subject)) {
      throw new Error(`${schema.typeName}: event subject "${subject}" is not <service>.v1.<entity>.<past-tense verb>`);
    }
    subjects.set(schema, subject);
  }
  return subject;
}

/** Every event message of an events.proto with its subject; throws for a message without one. */
export function eventSubjectsOf(file: DescFile): Map<DescMessage, string> {
  return new Map(file.messages.map((message) => [message, subjectOf(message)]));
}

/**
 * The subjects of a module's events under the names its code uses for them (`subjects.orderPlaced`),
 * after checking that every event message of `file` falls inside `stream`: one outside it would
 * never be stored, so it stops the process when the module loads.
 */
export function streamSubjects<const Events extends Record<string, DescMessage>>(
  file: DescFile,
  stream: StreamDefinition,
  events: Events,
): { readonly [Name in keyof Events]: string } {
  const declared = eventSubjectsOf(file);
  for (const [message, subject] of declared) {
    if (!stream.subjects.some((pattern) => subjectMatches(pattern, subject))) {
      throw new Error(`${message.typeName}: subject ${subject} is outside the ${stream.name} stream (${stream.subjects.join(", ")})`);
    }
  }
  return Object.fromEntries(Object.entries(events).map(([name, schema]) => [name, subjectOf(schema)])) as {
    readonly [Name in keyof Events]: string;
  };
}
