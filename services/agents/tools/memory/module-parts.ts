// What the memory and task tools add to the agents module's database: their entities and the
// migration agents-0006-memory-tasks (registered in services/agents/index.ts).
import { AgentsMemoryTasks0006 } from "../../migrations/0006-memory-tasks.js";
import { TaskEntity } from "../tasks/entities.js";
import { MemoryEntity } from "./entities.js";

export const memoryTasksParts = {
  entities: [MemoryEntity, TaskEntity],
  migrations: [{ name: "agents-0006-memory-tasks", class: AgentsMemoryTasks0006 }],
};
