// Memory tools: notes shared by every agent and instance, kept in the mesh database. memory_store
// → `{ id }`; memory_search ranks with PostgreSQL full text (`websearch_to_tsquery('english', …)`,
// ts_rank over the text and its category) → `[{ id, text, category, score }]`; memory_forget of an
// unknown id is an Error.
import { randomUUID } from "node:crypto";
import type { EntityManager } from "@mikro-orm/core";
import { type ToolContext, type ToolSpec, ToolError } from "../tool.js";
import { MemoryEntity } from "./entities.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface MemoryHit {
  id: string;
  text: string;
  category: string | null;
  score: number;
}

/** The mesh database, or an Error saying the tool has none (a process built without it). */
export function entityManager(ctx: ToolContext): EntityManager {
  if (!ctx.services.em) throw new ToolError("the mesh database is not available to tools in this process");
  return ctx.services.em();
}

export const memoryTools: ToolSpec[] = [
  {
    name: "memory_store",
    description: "Remember a piece of text (shared by every agent); answers { id }.",
    tier: "C",
    parameters: {
      type: "object",
      properties: {
        text: { type: "string", description: "What to remember." },
        category: { type: "string", description: "A category to file it under." },
      },
      required: ["text"],
    },
    async run(args, ctx) {
      const text = String(args.text).trim();
      if (text === "") throw new ToolError("text must not be empty");
      const category = typeof args.category === "string" && args.category.trim() !== "" ? args.category.trim() : null;
      const em = entityManager(ctx);
      const row = em.create(MemoryEntity, { id: randomUUID(), text, category, agentId: ctx.agentId ?? null, createdAt: new Date() });
      await em.flush();
      return { id: row.id };
    },
  },
  {
    name: "memory_search",
    description: 'Search the memory with full-text search (web-search syntax: words, "phrases", or, -not); answers the best matches.',
    tier: "A",
    parameters: {
      type: "object",
      properties: {
        query: { type: "string", description: "What to look for." },
        maxResults: { type: "integer", default: 5, description: "How many matches at most." },
      },
      required: ["query"],
    },
    async run(args, ctx) {
      const query = String(args.query).trim();
      if (query === "") throw new ToolError("query must not be empty");
      const maxResults = typeof args.maxResults === "number" ? Math.trunc(args.maxResults) : 5;
      if (maxResults < 1) throw new ToolError("maxResults must be at least 1");
      const rows: MemoryHit[] = await entityManager(ctx)
        .getConnection()
        .execute(
          `select "id", "text", "category", ts_rank("search", q) as "score"
             from "agents_memory", websearch_to_tsquery('english', ?) as q
            where "search" @@ q
            order by "score" desc, "created_at" desc, "id"
            limit ?`,
          [query, Math.min(maxResults, 1000)],
        );
      return rows.map((r: MemoryHit) => ({ id: r.id, text: r.text, category: r.category, score: Number(Number(r.score).toFixed(6)) }));
    },
  },
  {
    name: "memory_forget",
    description: "Forget a memory by its id.",
    tier: "C",
    parameters: { type: "object", properties: { id: { type: "string", description: "The memory's id." } }, required: ["id"] },
    async run(args, ctx) {
      const id = String(args.id).trim();
      const deleted = UUID.test(id) ? await entityManager(ctx).nativeDelete(MemoryEntity, { id }) : 0;
      if (deleted === 0) throw new ToolError(`no memory with id '${id}'`);
      return `Forgot memory ${id}.`;
    },
  },
];
