// Pending approvals, shared through the mesh database: a turn on one instance waits on a row an
// Operator decides on another. `ask` inserts the item (and records tool.approval_requested through
// the outbox), then waits for a decision until Tools:Approval:TimeoutSeconds: woken at once when the
// decision is made on this instance, else by polling the row. `decide` answers 404 (unknown),
// 409 (decided or expired) or 400 (a decision the item does not take; answers that do not fit the
// questions, checked as ask_questions checks a hub client's; cancel when allowCancel is false).
import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { ToolApprovalRequestedSchema } from "../../../../gen/agents/v1/events_pb.js";
import type { UnitOfWork } from "../../../runtime/outbox/index.js";
import { badRequest, refusal } from "../../agents/errors.js";
import { answersProblem, type QuestionsRequest } from "../core/ask-questions.js";
import { ApprovalEntity, type ApprovalRow } from "./tables.js";

/** How often a waiting call looks at its row when the decision may come from another instance. */
const POLL_MS = 250;

export interface ApprovalItem {
  agentId: string;
  sessionId?: string;
  kind: "tool" | "questions";
  tool: string;
  canonical: string;
  tier: string;
  arguments: unknown;
}

export interface ApprovalAnswer {
  decision: "approve" | "deny" | "answered" | "cancelled" | "expired";
  answers?: unknown;
}

export interface ApprovalsOptions {
  em: () => EntityManager;
  uow: UnitOfWork;
  timeoutSeconds: () => number;
}

export class Approvals {
  private readonly decided = new EventEmitter().setMaxListeners(0);

  constructor(private readonly options: ApprovalsOptions) {}

  async ask(item: ApprovalItem, signal?: AbortSignal): Promise<ApprovalAnswer> {
    const id = randomUUID();
    const now = new Date();
    const expiresAt = new Date(now.getTime() + this.options.timeoutSeconds() * 1000);
    await this.options.uow.run(async (tx) => {
      tx.em.persist(
        tx.em.create(ApprovalEntity, {
          id,
          agentId: item.agentId,
          sessionId: item.sessionId ?? null,
          kind: item.kind,
          tool: item.tool,
          canonical: item.canonical,
          tier: item.tier,
          arguments: item.arguments ?? {},
          createdAt: now,
          expiresAt,
          decision: null,
          answers: null,
          decidedAt: null,
        }),
      );
      tx.record(ToolApprovalRequestedSchema, {
        agentId: item.agentId,
        approvalId: id,
        kind: item.kind,
        tool: item.tool,
        canonical: item.canonical,
        tier: item.tier,
        expiresAt: timestampFromDate(expiresAt),
      });
    });
    return this.wait(id, expiresAt, signal);
  }

  /**
   * Asks a connected client instead (the hub's ConfirmTool or AskQuestions): its answer, or
   * `unanswered` (default false) when it fails, `signal` aborts or it gives none within
   * Tools:Approval:TimeoutSeconds. The signal `ask` gets aborts then, so the client call is let go.
   */
  async askClient<Q extends object, A = boolean>(
    agentId: string,
    question: Q,
    ask: (question: Q & { approvalId: string; agentId: string }, signal: AbortSignal) => Promise<A>,
    options: { unanswered?: A; signal?: AbortSignal } = {},
  ): Promise<A> {
    const unanswered = (options.unanswered ?? false) as A;
    const controller = new AbortController();
    const signal = options.signal ? AbortSignal.any([controller.signal, options.signal]) : controller.signal;
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<A>((resolve) => {
      timer = setTimeout(() => resolve(unanswered), this.options.timeoutSeconds() * 1000);
      if (signal.aborted) resolve(unanswered);
      else signal.addEventListener("abort", () => resolve(unanswered), { once: true });
    });
    try {
      return await Promise.race([ask({ ...question, approvalId: randomUUID(), agentId }, signal).catch(() => unanswered), gaveUp]);
    } finally {
      clearTimeout(timer);
      controller.abort();
    }
  }

  private async wait(id: string, expiresAt: Date, signal?: AbortSignal): Promise<ApprovalAnswer> {
    for (;;) {
      const row = await this.options.em().findOne(ApprovalEntity, { id });
      if (row?.decision) return { decision: row.decision as ApprovalAnswer["decision"], answers: row.answers ?? undefined };
      const left = expiresAt.getTime() - Date.now();
      if (left <= 0 || signal?.aborted) {
        // Closed, so a late decision gets 409; a decision that just landed wins.
        await this.options.em().nativeUpdate(ApprovalEntity, { id, decision: null }, { decision: "expired", decidedAt: new Date() });
        const final = await this.options.em().findOne(ApprovalEntity, { id });
        if (final?.decision && final.decision !== "expired")
          return { decision: final.decision as ApprovalAnswer["decision"], answers: final.answers ?? undefined };
        return { decision: "expired" };
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.decided.off(id, done);
          signal?.removeEventListener("abort", done);
          resolve();
        };
        const timer = setTimeout(done, Math.min(POLL_MS, left));
        this.decided.once(id, done);
        signal?.addEventListener("abort", done, { once: true });
      });
    }
  }

  /** The agent's pending items, oldest first. */
  async list(agentId: string): Promise<ApprovalRow[]> {
    return this.options
      .em()
      .find(ApprovalEntity, { agentId, decision: null, expiresAt: { $gt: new Date() } }, { orderBy: { createdAt: "asc", id: "asc" } });
  }

  async decide(agentId: string, approvalId: string, body: { decision?: string; answers?: unknown }): Promise<ApprovalRow> {
    const row = await this.options.em().findOne(ApprovalEntity, { id: approvalId, agentId });
    if (!row) throw refusal(Code.NotFound, `no approval ${approvalId} for agent ${agentId}`);
    let decision: string;
    if (row.kind === "questions") {
      const request = row.arguments as Partial<QuestionsRequest>;
      if (body.decision === "cancel" || body.decision === "cancelled") {
        if (request.allowCancel === false) throw badRequest("decision", "this questions item does not allow cancel (allowCancel: false)");
        decision = "cancelled";
      } else if (body.answers !== undefined && body.answers !== null) {
        // The same check as a hub client's answers (ask-questions.ts).
        const problem = answersProblem(request.questions ?? [], body.answers);
        if (problem) throw badRequest("answers", problem);
        decision = "answered";
      } else throw badRequest("answers", 'a questions item is answered with { answers } (or { decision: "cancel" })');
    } else {
      if (body.decision !== "approve" && body.decision !== "deny")
        throw badRequest("decision", `decision must be approve or deny (got ${JSON.stringify(body.decision ?? "")})`);
      decision = body.decision;
    }
    const now = new Date();
    const changed = await this.options
      .em()
      .nativeUpdate(
        ApprovalEntity,
        { id: approvalId, decision: null, expiresAt: { $gt: now } },
        { decision, decidedAt: now, ...(decision === "answered" ? { answers: body.answers } : {}) },
      );
    if (changed === 0) throw refusal(Code.Aborted, `approval ${approvalId} is already decided or expired`);
    this.decided.emit(approvalId);
    return { ...row, decision, decidedAt: now };
  }
}
