// The tool catalogue's core tables (migration agents-0008-tools), shared by every instance:
// agents_tool_policy (an agent's approvalMode, allow, deny), agents_tool_session (a session's
// /autorun and /permissions overrides and the C tools approved in it), agents_approval (calls and
// questions waiting for a decision) and agents_tool_usage (get_usage's counters per agent).
import { EntitySchema } from "@mikro-orm/core";
import { Migration } from "@mikro-orm/migrations";

const timestamptz = { type: "Date", columnType: "timestamptz" } as const;
const jsonb = { type: "json", columnType: "jsonb" } as const;

export interface ToolPolicyRow {
  agentId: string;
  approvalMode: string | null;
  allow: string[];
  deny: string[];
  updatedAt: Date;
}

export const ToolPolicyEntity = new EntitySchema<ToolPolicyRow>({
  name: "AgentsToolPolicy",
  tableName: "agents_tool_policy",
  properties: {
    agentId: { type: "uuid", primary: true },
    approvalMode: { type: "text", nullable: true },
    allow: { ...jsonb },
    deny: { ...jsonb },
    updatedAt: { ...timestamptz },
  },
});

export interface ToolSessionRow {
  sessionId: string;
  autorun: boolean;
  permissionsOff: boolean;
  approved: string[];
}

export const ToolSessionEntity = new EntitySchema<ToolSessionRow>({
  name: "AgentsToolSession",
  tableName: "agents_tool_session",
  properties: {
    sessionId: { type: "text", primary: true },
    autorun: { type: "boolean" },
    permissionsOff: { type: "boolean" },
    approved: { ...jsonb },
  },
});

export interface ApprovalRow {
  id: string;
  agentId: string;
  sessionId: string | null;
  /** `tool` or `questions`. */
  kind: string;
  tool: string;
  canonical: string;
  tier: string;
  /** Redacted (tool), or the questions request (questions). */
  arguments: unknown;
  createdAt: Date;
  expiresAt: Date;
  /** null while pending; `approve`, `deny`, `answered` or `cancelled`. */
  decision: string | null;
  answers: unknown;
  decidedAt: Date | null;
}

export const ApprovalEntity = new EntitySchema<ApprovalRow>({
  name: "AgentsApproval",
  tableName: "agents_approval",
  properties: {
    id: { type: "uuid", primary: true },
    agentId: { type: "uuid" },
    sessionId: { type: "text", nullable: true },
    kind: { type: "text" },
    tool: { type: "text" },
    canonical: { type: "text" },
    tier: { type: "text" },
    arguments: { ...jsonb },
    createdAt: { ...timestamptz },
    expiresAt: { ...timestamptz },
    decision: { type: "text", nullable: true },
    answers: { ...jsonb, nullable: true },
    decidedAt: { ...timestamptz, nullable: true },
  },
});

export interface ToolUsageRow {
  agentId: string;
  /** bigint columns: read through usage.ts as numbers. */
  promptTokens: string;
  completionTokens: string;
  toolCalls: number;
  turns: number;
}

export const ToolUsageEntity = new EntitySchema<ToolUsageRow>({
  name: "AgentsToolUsage",
  tableName: "agents_tool_usage",
  properties: {
    agentId: { type: "uuid", primary: true },
    promptTokens: { type: "bigint" },
    completionTokens: { type: "bigint" },
    toolCalls: { type: "integer" },
    turns: { type: "integer" },
  },
});

export const toolEntities = [ToolPolicyEntity, ToolSessionEntity, ApprovalEntity, ToolUsageEntity];

export class AgentsTools0008 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "agents_tool_policy" (
      "agent_id" uuid primary key,
      "approval_mode" text null,
      "allow" jsonb not null default '[]'::jsonb,
      "deny" jsonb not null default '[]'::jsonb,
      "updated_at" timestamptz not null
    )`);
    this.addSql(`create table "agents_tool_session" (
      "session_id" text primary key,
      "autorun" boolean not null default false,
      "permissions_off" boolean not null default false,
      "approved" jsonb not null default '[]'::jsonb
    )`);
    this.addSql(`create table "agents_approval" (
      "id" uuid primary key,
      "agent_id" uuid not null,
      "session_id" text null,
      "kind" text not null,
      "tool" text not null,
      "canonical" text not null,
      "tier" text not null,
      "arguments" jsonb not null default '{}'::jsonb,
      "created_at" timestamptz not null,
      "expires_at" timestamptz not null,
      "decision" text null,
      "answers" jsonb null,
      "decided_at" timestamptz null
    )`);
    this.addSql(`create index "agents_approval_agent_idx" on "agents_approval" ("agent_id", "created_at")`);
    this.addSql(`create table "agents_tool_usage" (
      "agent_id" uuid primary key,
      "prompt_tokens" bigint not null default 0,
      "completion_tokens" bigint not null default 0,
      "tool_calls" integer not null default 0,
      "turns" integer not null default 0
    )`);
  }
}
