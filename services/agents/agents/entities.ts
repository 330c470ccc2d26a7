// agents_agent as MikroORM sees it (migration agents-0001-core): one row per running agent.
import { EntitySchema } from "@mikro-orm/core";

export type AgentState = "active" | "idle";

export interface AgentRow {
  id: string;
  sessionId: string;
  provider: string;
  model: string;
  systemPrompt: string | null;
  state: AgentState;
  turnCount: number;
  createdAt: Date;
  lastActivityAt: Date;
  /** The turn under way (on any instance), null when none. */
  runningTurn: string | null;
  runningSince: Date | null;
}

const timestamptz = { type: "Date", columnType: "timestamptz" } as const;

export const AgentEntity = new EntitySchema<AgentRow>({
  name: "AgentsAgent",
  tableName: "agents_agent",
  properties: {
    id: { type: "uuid", primary: true },
    sessionId: { type: "uuid" },
    provider: { type: "text" },
    model: { type: "text" },
    systemPrompt: { type: "text", nullable: true },
    state: { type: "text" },
    turnCount: { type: "integer" },
    createdAt: { ...timestamptz },
    lastActivityAt: { ...timestamptz },
    runningTurn: { type: "uuid", nullable: true },
    runningSince: { ...timestamptz, nullable: true },
  },
});
