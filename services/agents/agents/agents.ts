// The agents themselves, kept in the mesh database so that every instance sees the same ones:
// spawn (MaxConcurrentAgents across instances under an advisory lock), stop (the session closes),
// and the idle rules (Active → Idle after IdleTimeout without a turn, stopped after as long again).
// Events go through the outbox (stream AGENTS); audit entries through the injected AuditLog.
import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { AgentSpawnedSchema, AgentStoppedSchema } from "../../../gen/agents/v1/events_pb.js";
import { currentIdentity } from "../../runtime/auth/identity.js";
import type { PreparedReads } from "../../runtime/database/index.js";
import type { LoggerLike } from "../../runtime/logging/index.js";
import type { Transaction, UnitOfWork } from "../../runtime/outbox/index.js";
import type { AuditEntry, AuditLog } from "../audit/types.js";
import type { ProviderPool } from "../providers/index.js";
import type { GatewayAgentsSettings } from "../settings.js";
import { SessionEntity } from "../sessions/entities.js";
import { AgentEntity, type AgentRow } from "./entities.js";
import { badRequest, refusal } from "./errors.js";
import type { ToolsCore } from "../tools/module-parts.js";
import type { TurnInstruments } from "./turn-telemetry.js";

export interface AgentsDeps {
  db: { em(): EntityManager; reads: PreparedReads };
  uow: UnitOfWork;
  pool: ProviderPool;
  audit: AuditLog;
  settings: GatewayAgentsSettings;
  logger: Pick<LoggerLike, "info" | "warn" | "error">;
  /** The turn's spans and meters (turn-telemetry.ts). */
  instruments: TurnInstruments;
  /** The tool catalogue: the dispatcher every tool call goes through, and the pending approvals. */
  tools: ToolsCore;
}

/** A turn whose marker is older than TurnTimeout plus this was left by an instance that died. */
export const STALE_TURN_MARGIN_MS = 60_000;

/** The advisory lock spawns take (one per mesh database): "agents_agent spawn". */
const SPAWN_LOCK = 0x61_67_6e_74;

export interface SpawnInput {
  provider?: string;
  model?: string;
  systemPrompt?: string;
}

export function userId(): string | undefined {
  return currentIdentity().name;
}

/** Audits with the transaction of `tx`, the caller's key Name as userId. */
export async function audit(deps: Pick<AgentsDeps, "audit">, tx: Transaction, entry: AuditEntry): Promise<void> {
  const user = entry.userId ?? userId();
  await deps.audit.record(tx.em, { ...entry, ...(user ? { userId: user } : {}) });
}

export class Agents {
  constructor(readonly deps: AgentsDeps) {}

  /** The provider and model a spawn gets: what it asked for, checked, else the defaults. */
  choose(input: SpawnInput): { provider: string; model: string } {
    const { pool, settings } = this.deps;
    let provider = input.provider;
    if (provider !== undefined) {
      if (!pool.modelsOf(provider)) {
        const known = pool.list().map((p) => p.name);
        throw badRequest("provider", `unknown provider '${provider}'${known.length ? ` (configured: ${known.join(", ")})` : ""}`);
      }
    } else {
      provider = pool.defaultChoice()?.provider;
      if (provider === undefined)
        throw refusal(Code.Unavailable, "no provider is configured (Providers:<name>:*)", { "retry-after": "30" });
    }
    const models = pool.modelsOf(provider)!;
    if (input.model !== undefined) {
      if (!models.includes(input.model)) {
        throw badRequest("model", `provider '${provider}' does not list model '${input.model}' (it lists ${models.join(", ")})`);
      }
      return { provider, model: input.model };
    }
    const fallback = settings.defaultModel;
    return { provider, model: fallback && models.includes(fallback) ? fallback : models[0]! };
  }

  async spawn(input: SpawnInput): Promise<AgentRow> {
    const { provider, model } = this.choose(input);
    const max = this.deps.settings.maxConcurrentAgents;
    return this.deps.uow.run(async (tx) => {
      // Every instance counts and inserts under the same lock: two spawns never both take the last place.
      await tx.em.execute("select pg_advisory_xact_lock(?)", [SPAWN_LOCK]);
      const running = await tx.em.count(AgentEntity, {});
      if (running >= max) {
        throw refusal(
          Code.ResourceExhausted,
          `MaxConcurrentAgents reached: ${running} agents are running (Gateway:Agents:MaxConcurrentAgents = ${max})`,
        );
      }
      const now = new Date();
      const id = randomUUID();
      const sessionId = randomUUID();
      const systemPrompt = input.systemPrompt ?? null;
      tx.em.persist(
        tx.em.create(SessionEntity, {
          id: sessionId,
          agentId: id,
          provider,
          model,
          systemPrompt,
          createdAt: now,
          closedAt: null,
          turnCount: 0,
        }),
      );
      // The session first: the agent row refers to it.
      await tx.em.flush();
      const agent: AgentRow = {
        id,
        sessionId,
        provider,
        model,
        systemPrompt,
        state: "active",
        turnCount: 0,
        createdAt: now,
        lastActivityAt: now,
        runningTurn: null,
        runningSince: null,
      };
      tx.em.persist(tx.em.create(AgentEntity, agent));
      await tx.em.flush();
      tx.record(AgentSpawnedSchema, { agentId: id, provider, model });
      await audit(this.deps, tx, {
        action: "agent.spawn",
        severity: "info",
        resource: id,
        sessionId,
        detail: { agentId: id, provider, model },
      });
      await audit(this.deps, tx, { action: "session.create", severity: "info", resource: sessionId, sessionId, detail: { agentId: id } });
      this.deps.logger.info({ agentId: id, provider, model }, "agent spawned");
      return agent;
    });
  }

  // Reads as prepared statements (db.reads), without the ORM's query building and hydration.
  async list(): Promise<AgentRow[]> {
    return this.deps.db.reads.where(AgentEntity, "agents_agent_list", `order by "created_at", "id"`, []);
  }

  async get(id: string): Promise<AgentRow> {
    const agent = await this.deps.db.reads.byId(AgentEntity, id);
    if (!agent) throw notFound(id);
    return agent;
  }

  /** Stops an agent: its row goes, its session closes, AgentStopped is published. False when another stop won (idle). */
  async stop(id: string, reason: "requested" | "idle", idleCutoff?: Date): Promise<boolean> {
    return this.deps.uow.run(async (tx) => {
      const staleCutoff = new Date(Date.now() - this.deps.settings.turnTimeout - STALE_TURN_MARGIN_MS);
      const rows =
        reason === "idle"
          ? await tx.em.execute<{ id: string; session_id: string }[]>(
              `delete from "agents_agent" where "id" = ? and "last_activity_at" <= ?
                 and ("running_turn" is null or "running_since" < ?) returning "id", "session_id"`,
              [id, idleCutoff, staleCutoff],
            )
          : await tx.em.execute<{ id: string; session_id: string }[]>(
              `delete from "agents_agent" where "id" = ? returning "id", "session_id"`,
              [id],
            );
      const row = rows[0];
      if (!row) {
        if (reason === "requested") throw notFound(id);
        return false;
      }
      await tx.em.execute(`update "agents_session" set "closed_at" = ? where "id" = ? and "closed_at" is null`, [
        new Date(),
        row.session_id,
      ]);
      tx.record(AgentStoppedSchema, { agentId: id, reason });
      const user = reason === "requested" ? undefined : "system";
      await audit(this.deps, tx, {
        action: "agent.stop",
        severity: "info",
        resource: id,
        sessionId: row.session_id,
        detail: { agentId: id, reason },
        ...(user ? { userId: user } : {}),
      });
      await audit(this.deps, tx, {
        action: "session.close",
        severity: "info",
        resource: row.session_id,
        sessionId: row.session_id,
        detail: { agentId: id, reason },
        ...(user ? { userId: user } : {}),
      });
      this.deps.logger.info({ agentId: id, reason }, "agent stopped");
      return true;
    });
  }

  /**
   * One pass of the idle rules: agents without a turn for IdleTimeout become Idle; those without
   * one for twice as long are stopped (reason idle). A running turn keeps an agent as it is.
   */
  async sweepIdle(now = new Date()): Promise<number> {
    const idle = this.deps.settings.idleTimeout;
    const idleCutoff = new Date(now.getTime() - idle);
    const stopCutoff = new Date(now.getTime() - 2 * idle);
    const staleCutoff = new Date(now.getTime() - this.deps.settings.turnTimeout - STALE_TURN_MARGIN_MS);
    const em = this.deps.db.em();
    await em.execute(
      `update "agents_agent" set "state" = 'idle' where "state" = 'active' and "last_activity_at" <= ?
         and ("running_turn" is null or "running_since" < ?)`,
      [idleCutoff, staleCutoff],
    );
    const due = await em.execute<{ id: string }[]>(
      `select "id" from "agents_agent" where "last_activity_at" <= ? and ("running_turn" is null or "running_since" < ?)`,
      [stopCutoff, staleCutoff],
    );
    let stopped = 0;
    for (const { id } of due) if (await this.stop(id, "idle", stopCutoff)) stopped++;
    return stopped;
  }

  /** Runs sweepIdle often enough that an idle agent stops at most about a second late. */
  startIdleWorker(): { stop(): Promise<void> } {
    const period = Math.max(20, Math.min(1000, Math.floor(this.deps.settings.idleTimeout / 4)));
    let running: Promise<void> | undefined;
    let stopped = false;
    const timer = setInterval(() => {
      if (running || stopped) return;
      running = this.sweepIdle()
        .then(
          () => undefined,
          (error: unknown) => this.deps.logger.warn({ error: error instanceof Error ? error.message : String(error) }, "idle sweep failed"),
        )
        .finally(() => {
          running = undefined;
        });
    }, period);
    timer.unref();
    return {
      async stop() {
        stopped = true;
        clearInterval(timer);
        await running;
      },
    };
  }
}

export function notFound(id: string) {
  return refusal(Code.NotFound, `no agent ${id}`);
}

export function checkMessageGiven(message: string): void {
  if (message.trim() === "") throw badRequest("message", "message must not be empty");
}
