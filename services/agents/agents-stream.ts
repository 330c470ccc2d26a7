// The JetStream stream of the agent gateway's events (subjects are stated in proto/agents/v1/events.proto).
import { file_agents_v1_events } from "../../gen/agents/v1/events_pb.js";
import type { StreamDefinition } from "../runtime/bus/index.js";

export const agentsStream: StreamDefinition = { name: "AGENTS", subjects: [`${file_agents_v1_events.proto.package}.>`] };
