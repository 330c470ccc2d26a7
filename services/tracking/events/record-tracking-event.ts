// The old way to record a tracking event, on an entity manager whose transaction (and relay
// wake-up) the caller handles. Kept only for webhook-service.ts, which is being moved out of
// tracking; new code records through the unit of work: deps.uow.run((tx) => tx.record(schema, payload)).
import type { DescMessage, MessageInitShape } from "@bufbuild/protobuf";
import type { EntityManager } from "@mikro-orm/postgresql";
import { subjectOf } from "../../runtime/bus/index.js";
import { transactionOn } from "../../runtime/outbox/index.js";

/** @deprecated Record through TrackingDeps.uow; the subject comes from the message's contract. */
export function recordTrackingEvent<S extends DescMessage>(
  em: EntityManager,
  subject: string,
  schema: S,
  payload: Omit<MessageInitShape<S>, "eventId" | "occurredAt" | "$typeName">,
): string {
  // The subject is the contract's; a caller naming another one has a stale table.
  if (subject !== subjectOf(schema)) throw new Error(`${schema.typeName} travels on ${subjectOf(schema)}, not ${subject}`);
  return transactionOn(em).record(schema, payload as MessageInitShape<S>);
}
