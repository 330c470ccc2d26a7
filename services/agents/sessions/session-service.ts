// agents.v1.SessionService handlers: sessions newest first; one session with its turns and their tool calls.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { SessionService } from "../../../gen/agents/v1/session_pb.js";
import { checkId, refusal } from "../agents/errors.js";
import { SessionEntity, type SessionRow, ToolCallEntity, TurnEntity } from "./entities.js";

function toSession(row: SessionRow) {
  return {
    id: row.id,
    agentId: row.agentId,
    provider: row.provider,
    model: row.model,
    createdAt: timestampFromDate(row.createdAt),
    closedAt: row.closedAt ? timestampFromDate(row.closedAt) : undefined,
    turnCount: row.turnCount,
  };
}

export function sessionService(db: { em(): EntityManager }): ServiceImpl<typeof SessionService> {
  return {
    async listSessions() {
      const rows = await db.em().find(SessionEntity, {}, { orderBy: { createdAt: "desc", id: "desc" } });
      return { sessions: rows.map(toSession) };
    },

    async getSession(req) {
      const id = checkId("id", req.id, "session");
      const em = db.em();
      const session = await em.findOne(SessionEntity, { id });
      if (!session) throw refusal(Code.NotFound, `no session ${id}`);
      const turns = await em.find(TurnEntity, { sessionId: id }, { orderBy: { index: "asc" } });
      const calls = turns.length
        ? await em.find(ToolCallEntity, { turnId: { $in: turns.map((t) => t.id) } }, { orderBy: { position: "asc" } })
        : [];
      return {
        ...toSession(session),
        turns: turns.map((turn) => ({
          index: turn.index,
          message: turn.message,
          response: turn.response,
          provider: turn.provider,
          model: turn.model,
          startedAt: timestampFromDate(turn.startedAt),
          durationMs: turn.durationMs,
          promptTokens: turn.promptTokens,
          completionTokens: turn.completionTokens,
          toolCalls: calls
            .filter((c) => c.turnId === turn.id)
            .map((c) => ({ id: c.callId, name: c.name, arguments: c.arguments, result: c.result, outcome: c.outcome })),
        })),
      };
    },
  };
}
