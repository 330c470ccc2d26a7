// tool.approval_requested as /hubs/events shows it: event type, source id (the agent) and payload.
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import test from "ava";
import { ToolApprovalRequestedSchema } from "../../../gen/agents/v1/events_pb.js";
import { subjectOf } from "../../runtime/bus/index.js";
import { gatewayEventOf } from "./gateway-events.js";

test("agents.v1.tool.approval_requested shows as tool.approval_requested with the approval's fields", (t) => {
  const expiresAt = new Date("2026-01-02T03:04:05.000Z");
  const data = toBinary(
    ToolApprovalRequestedSchema,
    create(ToolApprovalRequestedSchema, {
      eventId: "e1",
      occurredAt: timestampFromDate(new Date("2026-01-02T03:03:05.000Z")),
      agentId: "a1",
      approvalId: "p1",
      kind: "tool",
      tool: "bash",
      canonical: "run_command",
      tier: "X",
      expiresAt: timestampFromDate(expiresAt),
    }),
  );
  const event = gatewayEventOf({
    subject: subjectOf(ToolApprovalRequestedSchema),
    id: "bus-id",
    data,
    headers: {},
    seq: 1,
    stream: "AGENTS",
    timestamp: new Date(),
    redelivered: false,
  });
  t.like(event, { id: "e1", eventType: "tool.approval_requested", sourceId: "a1" });
  t.deepEqual(event?.payload, {
    agentId: "a1",
    approvalId: "p1",
    kind: "tool",
    tool: "bash",
    canonical: "run_command",
    tier: "X",
    expiresAt: expiresAt.toISOString(),
  });
});
