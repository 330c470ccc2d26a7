// ToolService (proto/agents/v1/tool.proto): the catalogue at /api/tools (list, invoke through the
// dispatcher with source `rpc`), an agent's tool policy and its pending approvals.
import type { JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { ToolService } from "../../../gen/agents/v1/tool_pb.js";
import { notFound } from "../agents/agents.js";
import { AgentEntity } from "../agents/entities.js";
import { badRequest, checkId, refusal } from "../agents/errors.js";
import type { Dispatcher } from "./dispatch.js";
import { type ApprovalMode, approvalModes } from "./policy.js";
import type { Approvals } from "./state/approvals.js";

export interface ToolServiceDeps {
  dispatcher: Dispatcher;
  approvals: Approvals;
  em: () => EntityManager;
}

export function toolService(deps: ToolServiceDeps): ServiceImpl<typeof ToolService> {
  const { dispatcher } = deps;
  const existingAgent = async (field: string, raw: string) => {
    const id = checkId(field, raw, "agent");
    const agent = await deps.em().findOne(AgentEntity, { id });
    if (!agent) throw notFound(id);
    return agent;
  };
  const policyOf = async (agentId: string) => {
    const policy = await dispatcher.policies.agent(agentId);
    return {
      approvalMode: policy?.approvalMode ?? dispatcher.settings.approval.mode,
      allow: policy?.allow ?? [],
      deny: policy?.deny ?? [],
    };
  };
  const checkGlobs = (field: string, globs: readonly string[]) => {
    const bad = globs.findIndex((g) => g.trim() === "");
    if (bad >= 0) throw badRequest(field, `${field}[${bad}] must be a tool name or glob, not empty`);
    return globs.map((g) => g.trim());
  };

  return {
    async listTools() {
      return {
        tools: dispatcher.tools().map((tool) => ({
          name: tool.name,
          functionName: tool.functionName ?? tool.name,
          tier: tool.tier,
          aliases: dispatcher.aliasesOf(tool),
          parameters: tool.parameters as unknown as JsonObject,
          description: tool.description,
        })),
      };
    },

    async invokeTool(req) {
      const agent = req.agentId !== undefined ? await existingAgent("agent_id", req.agentId) : undefined;
      if (req.mcpSessionId !== undefined && req.mcpSessionId.trim() === "")
        throw badRequest("mcp_session_id", "mcp_session_id must not be empty when set");
      // The dispatcher audits every call, an unknown name included; the 404 comes after.
      const result = await dispatcher.invoke({
        name: req.name,
        arguments: (req.arguments ?? {}) as Record<string, unknown>,
        source: req.mcpSessionId !== undefined ? "mcp" : "rpc",
        agentId: agent?.id,
        ...(req.mcpSessionId !== undefined ? { sessionId: `mcp:${req.mcpSessionId}` } : {}),
        askFirst: req.askFirst,
        confirm: async () => req.confirm,
      });
      if (result.status === "unknown_tool") throw refusal(Code.NotFound, `unknown tool '${req.name}'`);
      if (result.status === "invalid_arguments") throw badRequest("arguments", result.output.replace(/^Error: /, ""));
      return {
        name: result.name,
        canonical: result.canonical,
        tier: result.tier,
        outcome: result.outcome,
        output: result.output,
        isError: result.isError,
      };
    },

    async getToolPolicy(req) {
      const agent = await existingAgent("id", req.id);
      return policyOf(agent.id);
    },

    async setToolPolicy(req) {
      const agent = await existingAgent("id", req.id);
      if (req.approvalMode !== undefined && !approvalModes.includes(req.approvalMode as ApprovalMode))
        throw badRequest(
          "approval_mode",
          `approvalMode must be one of ${approvalModes.join(", ")} (got ${JSON.stringify(req.approvalMode)})`,
        );
      const current = await dispatcher.policies.agent(agent.id);
      const approvalMode = (req.approvalMode as ApprovalMode | undefined) ?? current?.approvalMode;
      await dispatcher.policies.setAgent(agent.id, {
        ...(approvalMode ? { approvalMode } : {}),
        allow: checkGlobs("allow", req.allow),
        deny: checkGlobs("deny", req.deny),
      });
      return policyOf(agent.id);
    },

    async listApprovals(req) {
      const agent = await existingAgent("id", req.id);
      const rows = await deps.approvals.list(agent.id);
      return {
        approvals: rows.map((row) => ({
          id: row.id,
          kind: row.kind,
          tool: row.tool,
          canonical: row.canonical,
          tier: row.tier,
          arguments: (row.arguments ?? {}) as JsonObject,
          expiresAt: timestampFromDate(row.expiresAt),
        })),
      };
    },

    async decideApproval(req) {
      const agentId = checkId("id", req.id, "agent");
      const approvalId = checkId("approval_id", req.approvalId, "approval");
      const row = await deps.approvals.decide(agentId, approvalId, { decision: req.decision || undefined, answers: req.answers });
      return { id: row.id, decision: row.decision ?? "" };
    },
  };
}
