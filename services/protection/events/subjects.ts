// The device protection service's events and the JetStream stream that keeps them. Subjects are
// the (meshwork.api.v1.event) options of the messages in proto/protection/v1/events.proto.
import {
  AccountRegisteredSchema,
  AccountRoleChangedSchema,
  AccountUpdatedSchema,
  file_protection_v1_events,
  TokenFamilyRevokedSchema,
} from "../../../gen/protection/v1/events_pb.js";
import { type StreamDefinition, streamSubjects } from "../../runtime/bus/index.js";

export const protectionStream: StreamDefinition = { name: "PROTECTION", subjects: [`${file_protection_v1_events.proto.package}.>`] };

export const protectionEvents = {
  accountRegistered: AccountRegisteredSchema,
  accountUpdated: AccountUpdatedSchema,
  accountRoleChanged: AccountRoleChangedSchema,
  tokenFamilyRevoked: TokenFamilyRevokedSchema,
} as const;

/** Each event's subject, under the same name as in protectionEvents. */
export const subjects = streamSubjects(file_protection_v1_events, protectionStream, protectionEvents);
