// What the tool catalogue adds to the agent gateway module: ToolService, the core tables and their
// migration, and at start the dispatcher over every family (catalogue.ts) with the database policy
// store, the shared approvals and the buffered audit (flushed at shutdown). The remote MCP servers
// (MCP:Servers) connect in the background after the dispatcher exists and set their tools on it
// as they are listed; their clients close at shutdown.
import type { ToolServices } from "./tool.js";
import { ToolService } from "../../../gen/agents/v1/tool_pb.js";
import type { Database } from "../../runtime/database/index.js";
import { defineService, type ServiceRegistration } from "../../runtime/host/index.js";
import type { LoggerLike } from "../../runtime/logging/index.js";
import type { Worker } from "../../runtime/module/index.js";
import type { UnitOfWork } from "../../runtime/outbox/index.js";
import type { AuditLog } from "../audit/types.js";
import type { ProviderPool } from "../providers/index.js";
import type { TurnInstruments } from "../agents/turn-telemetry.js";
import type { McpServerSettings } from "../settings.js";
import { Dispatcher } from "./dispatch.js";
import { Workspace } from "./jail.js";
import { REMOTE_MCP_FAMILY, RemoteMcpTools } from "./remote-mcp/index.js";
import { type ToolsSettings, toolSettingsOf } from "./settings.js";
import { Approvals } from "./state/approvals.js";
import { auditBuffer } from "./state/audit-buffer.js";
import { dbPolicyStore } from "./state/policy-store.js";
import { AgentsTools0008, toolEntities } from "./state/tables.js";
import { toolChat } from "./tool-chat.js";
import { toolService } from "./tool-service.js";

export interface ToolsCore {
  dispatcher: Dispatcher;
  approvals: Approvals;
}

export const toolsParts = {
  services: [ToolService],
  entities: toolEntities,
  migrations: [{ name: "agents-0008-tools", class: AgentsTools0008 }],
  async start(deps: {
    db: Database;
    uow: UnitOfWork;
    logger: Pick<LoggerLike, "info" | "warn" | "error">;
    settings: ToolsSettings;
    dataDir: string;
    audit: AuditLog;
    instruments: Pick<TurnInstruments, "toolInvocations">;
    pool: ProviderPool;
    /** The credential store (mesh_configure keeps its credential there). */
    credentials?: ToolServices["credentials"];
    /** The values of every configured secret setting (get_environment masks them). */
    secrets?: () => readonly string[];
    /** MCP:Servers: remote tool servers whose tools join the catalogue once listed. */
    mcpServers?: readonly McpServerSettings[];
  }): Promise<ToolsCore & { services: ServiceRegistration[]; workers: Worker[] }> {
    const settings = toolSettingsOf(deps.settings, deps.dataDir);
    const remote = new RemoteMcpTools({ servers: deps.mcpServers ?? [], credentials: deps.credentials, logger: deps.logger });
    const workspace = await Workspace.open(settings.workspaceRoot);
    const em = () => deps.db.em();
    const buffer = auditBuffer({ uow: deps.uow, log: deps.audit, logger: deps.logger });
    const approvals = new Approvals({ em, uow: deps.uow, timeoutSeconds: () => settings.approval.timeoutSeconds });
    const services = {
      workspace,
      em,
      approvals,
      pool: deps.pool,
      ...(deps.credentials ? { credentials: deps.credentials } : {}),
      ...(deps.secrets ? { secrets: deps.secrets } : {}),
    };
    const dispatcher: Dispatcher = new Dispatcher({
      settings: { ...settings, workspaceRoot: workspace.root },
      services: { ...services, chat: toolChat({ em, pool: deps.pool, dispatcher: () => dispatcher }) },
      policies: dbPolicyStore(em, deps.db.reads),
      audit: (entry) => buffer.push(entry),
      counter: () => deps.instruments.toolInvocations,
      logger: deps.logger,
    });
    remote.start((tools) => {
      try {
        dispatcher.setFamily(REMOTE_MCP_FAMILY, tools);
      } catch (error) {
        deps.logger.error({ error: (error as Error).message }, "remote MCP tools left out of the catalogue");
      }
    });
    return {
      dispatcher,
      approvals,
      services: [defineService(ToolService, toolService({ dispatcher, approvals, em }))],
      workers: [
        { name: "remote MCP servers", stop: () => remote.close() },
        { name: "tool audit buffer", stop: () => buffer.close() },
      ],
    };
  },
};
