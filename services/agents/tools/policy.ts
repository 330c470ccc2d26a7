// Tool policy: the deny/allow globs (`*`, `?`, case-insensitive), an agent's own policy
// (approvalMode, allow, deny), the session's overrides (/autorun, /permissions) and the C tools
// approved in a session. `ToolPolicyStore` keeps them; `memoryPolicyStore` for tests and a process
// without a database, `dbPolicyStore` (policy-store.ts) in the mesh database.

export const approvalModes = ["prompt", "auto", "deny"] as const;
export type ApprovalMode = (typeof approvalModes)[number];

export interface AgentToolPolicy {
  /** Unset: Tools:Approval:Mode. */
  approvalMode?: ApprovalMode;
  allow: string[];
  deny: string[];
}

export interface SessionToolState {
  /** /autorun: auto approval for the session (unset: the agent's mode). */
  autorun: boolean;
  /** /permissions off: confirmation and the agent's allow/deny lists lifted. */
  permissionsOff: boolean;
  /** C tools approved in this session (canonical names). */
  approved: ReadonlySet<string>;
}

export interface ToolPolicyStore {
  /** The agent's policy, or undefined (no agent, or none set: the defaults). */
  agent(agentId: string): Promise<AgentToolPolicy | undefined>;
  setAgent(agentId: string, policy: AgentToolPolicy): Promise<void>;
  session(sessionId: string): Promise<SessionToolState>;
  /** Both at once (one statement where the store can): what every call of an agent in a session reads. */
  agentAndSession?(agentId: string, sessionId: string): Promise<{ policy: AgentToolPolicy | undefined; session: SessionToolState }>;
  setSession(sessionId: string, change: { autorun?: boolean; permissionsOff?: boolean }): Promise<SessionToolState>;
  /** Remembers a C tool approved in the session. */
  remember(sessionId: string, canonical: string): Promise<void>;
  /** Forgets the session's approvals and overrides. */
  forgetSession?(sessionId: string): Promise<void>;
}

const globCache = new Map<string, RegExp>();

/** `*` any run, `?` one character, case-insensitive, whole name. */
export function globMatches(glob: string, name: string): boolean {
  let re = globCache.get(glob);
  if (!re) {
    const body = glob
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replace(/\*/g, ".*")
      .replace(/\?/g, ".");
    re = new RegExp(`^${body}$`, "i");
    globCache.set(glob, re);
  }
  return re.test(name);
}

/** The first glob of `globs` matching any of `names`. */
export function firstMatch(globs: readonly string[], names: readonly string[]): string | undefined {
  return globs.find((glob) => names.some((name) => globMatches(glob, name)));
}

export function memoryPolicyStore(): ToolPolicyStore {
  const agents = new Map<string, AgentToolPolicy>();
  const sessions = new Map<string, { autorun: boolean; permissionsOff: boolean; approved: Set<string> }>();
  const sessionOf = (id: string) => {
    let state = sessions.get(id);
    if (!state) {
      state = { autorun: false, permissionsOff: false, approved: new Set() };
      sessions.set(id, state);
    }
    return state;
  };
  return {
    async agent(agentId) {
      return agents.get(agentId);
    },
    async setAgent(agentId, policy) {
      agents.set(agentId, { ...policy, allow: [...policy.allow], deny: [...policy.deny] });
    },
    async session(sessionId) {
      return sessionOf(sessionId);
    },
    async setSession(sessionId, change) {
      const state = sessionOf(sessionId);
      if (change.autorun !== undefined) state.autorun = change.autorun;
      if (change.permissionsOff !== undefined) state.permissionsOff = change.permissionsOff;
      return state;
    },
    async remember(sessionId, canonical) {
      sessionOf(sessionId).approved.add(canonical);
    },
    async forgetSession(sessionId) {
      sessions.delete(sessionId);
    },
  };
}
