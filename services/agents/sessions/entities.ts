// agents_session, agents_turn and agents_tool_call as MikroORM sees them (migration agents-0001-core).
import { EntitySchema } from "@mikro-orm/core";

const timestamptz = { type: "Date", columnType: "timestamptz" } as const;

export interface SessionRow {
  id: string;
  agentId: string;
  provider: string;
  model: string;
  systemPrompt: string | null;
  createdAt: Date;
  closedAt: Date | null;
  turnCount: number;
}

export const SessionEntity = new EntitySchema<SessionRow>({
  name: "AgentsSession",
  tableName: "agents_session",
  properties: {
    id: { type: "uuid", primary: true },
    agentId: { type: "uuid" },
    provider: { type: "text" },
    model: { type: "text" },
    systemPrompt: { type: "text", nullable: true },
    createdAt: { ...timestamptz },
    closedAt: { ...timestamptz, nullable: true },
    turnCount: { type: "integer" },
  },
});

export interface TurnRow {
  id: string;
  sessionId: string;
  index: number;
  message: string;
  response: string;
  provider: string;
  model: string;
  startedAt: Date;
  durationMs: number;
  promptTokens: number;
  completionTokens: number;
}

export const TurnEntity = new EntitySchema<TurnRow>({
  name: "AgentsTurn",
  tableName: "agents_turn",
  properties: {
    id: { type: "uuid", primary: true },
    sessionId: { type: "uuid" },
    index: { type: "integer" },
    message: { type: "text" },
    response: { type: "text" },
    provider: { type: "text" },
    model: { type: "text" },
    startedAt: { ...timestamptz },
    durationMs: { type: "integer" },
    promptTokens: { type: "integer" },
    completionTokens: { type: "integer" },
  },
});

export interface ToolCallRow {
  id: string;
  turnId: string;
  position: number;
  /** The provider's tool_call_id. */
  callId: string;
  name: string;
  arguments: string;
  result: string;
  /** ok, denied or user_denied. */
  outcome: string;
}

export const ToolCallEntity = new EntitySchema<ToolCallRow>({
  name: "AgentsToolCall",
  tableName: "agents_tool_call",
  properties: {
    id: { type: "uuid", primary: true },
    turnId: { type: "uuid" },
    position: { type: "integer" },
    callId: { type: "text" },
    name: { type: "text" },
    arguments: { type: "text" },
    result: { type: "text" },
    outcome: { type: "text" },
  },
});
