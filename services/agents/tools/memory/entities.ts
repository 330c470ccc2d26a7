// agents_memory as MikroORM sees it (migration agents-0006-memory-tasks). The `search` column
// (a generated tsvector) is left out: only SQL reads it.
import { EntitySchema } from "@mikro-orm/core";

export interface MemoryRow {
  id: string;
  text: string;
  category: string | null;
  agentId: string | null;
  createdAt: Date;
}

export const MemoryEntity = new EntitySchema<MemoryRow>({
  name: "AgentsMemory",
  tableName: "agents_memory",
  properties: {
    id: { type: "uuid", primary: true },
    text: { type: "text" },
    category: { type: "text", nullable: true },
    agentId: { type: "text", nullable: true },
    createdAt: { type: "Date", columnType: "timestamptz" },
  },
});
