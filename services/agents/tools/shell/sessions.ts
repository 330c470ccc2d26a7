// Exec sessions: commands started by exec that may outlive the call, kept in this process (an
// instance's own children) until process clears or removes them. Each has an id, an owner (the
// agent, else the session) that alone sees it, its child (output kept as a tail), and a read mark
// for process poll. Every running child is killed when the process exits.
import { randomUUID } from "node:crypto";
import type { Child, RunResult } from "../process/runner.js";

export type SessionStatus = "running" | "completed" | "failed" | "killed";

export interface ExecSession {
  id: string;
  owner: string;
  command: string;
  child: Child;
  /** Offset of the output process poll has handed out. */
  readMark: number;
}

/** The record exec and process answer (run_command's record plus sessionId and status). */
export type SessionRecord = Omit<RunResult, "exitCode"> & {
  sessionId: string;
  status: SessionStatus;
  /** null while running. */
  exitCode: number | null;
};

const MAX_SESSIONS = 200;
const sessions = new Map<string, ExecSession>();
let exitHook = false;

export function addSession(owner: string, command: string, child: Child): ExecSession {
  if (!exitHook) {
    exitHook = true;
    process.once("exit", () => {
      for (const session of sessions.values()) if (session.child.running) session.child.kill();
    });
  }
  if (sessions.size >= MAX_SESSIONS) {
    const oldest = [...sessions.values()].find((s) => !s.child.running);
    if (oldest) sessions.delete(oldest.id);
  }
  const session: ExecSession = { id: randomUUID(), owner, command, child, readMark: 0 };
  sessions.set(session.id, session);
  return session;
}

/** The caller's session `id`, or undefined (another owner's session is not found either). */
export function sessionOf(owner: string, id: string): ExecSession | undefined {
  const session = sessions.get(id);
  return session?.owner === owner ? session : undefined;
}

export function sessionsOf(owner: string): ExecSession[] {
  return [...sessions.values()].filter((s) => s.owner === owner);
}

export function dropSession(id: string): void {
  sessions.delete(id);
}

export function statusOf(session: ExecSession): SessionStatus {
  const { child } = session;
  if (child.running) return "running";
  if (child.killed || child.timedOut) return child.timedOut && !child.killed ? "failed" : "killed";
  return child.result?.exitCode === 0 ? "completed" : "failed";
}

/** The record of a session, with `output` as given (exec: everything so far; poll: what is new). */
export function recordOf(session: ExecSession, output: string, truncated: boolean): SessionRecord {
  const { child } = session;
  return {
    sessionId: session.id,
    status: statusOf(session),
    exitCode: child.result?.exitCode ?? null,
    output,
    timedOut: child.timedOut,
    truncated,
    durationMs: child.result?.durationMs ?? Date.now() - child.startedAt,
  };
}
