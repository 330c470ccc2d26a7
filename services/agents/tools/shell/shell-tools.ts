// run_command, exec and process. Every line passes the shell rules first, runs through bash in
// the jail (cwd resolved by the workspace) with the runner's environment, group kill and cap.
// exec keeps a session when the command outlives yieldMs (or runs in the background); process
// lists, polls, reads, writes to, kills and removes those sessions.
import { type ToolContext, ToolError, type ToolSpec } from "../tool.js";
import { bashArgs, Child, childEnv, runShell, timeoutOf } from "../process/runner.js";
import { checkShellLine, shellRulesOf } from "./rules.js";
import { addSession, dropSession, type ExecSession, recordOf, sessionOf, sessionsOf } from "./sessions.js";

/** The jailed cwd of a shell line, after the shell rules accepted it. */
function prepare(ctx: ToolContext, command: string, cwd: unknown): string {
  if (command.trim() === "") throw new ToolError("command is empty");
  checkShellLine(command, shellRulesOf(ctx.settings));
  return ctx.services.workspace.resolve(typeof cwd === "string" ? cwd : ".");
}

const runCommand: ToolSpec = {
  name: "run_command",
  description:
    "Run a shell command (bash) in the workspace. Answers { exitCode, output, timedOut, truncated, durationMs }; the process group is killed on timeout.",
  tier: "X",
  parameters: {
    type: "object",
    properties: {
      command: { type: "string", description: "The shell line." },
      cwd: { type: "string", description: "Working directory inside the workspace (default its root)." },
      timeoutSeconds: { type: "integer", minimum: 1, default: 60, description: "Killed after this many seconds." },
    },
    required: ["command"],
  },
  async run(args, ctx) {
    const cwd = prepare(ctx, args.command as string, args.cwd);
    return {
      ...(await runShell(args.command as string, {
        cwd,
        env: childEnv(ctx.settings),
        maxChars: ctx.settings.maxOutputChars,
        timeoutMs: timeoutOf(ctx, (args.timeoutSeconds as number | undefined) ?? 60),
        signal: ctx.signal,
      })),
    };
  },
};

function ownerOf(ctx: ToolContext): string {
  return ctx.agentId ?? ctx.sessionId ?? "";
}

/** Waits until the session's child ends, `ms` pass, or `signal` aborts. */
async function waitFor(session: ExecSession, ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || !session.child.running) return;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  await Promise.race([
    session.child.done,
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      onAbort = () => resolve();
      signal.addEventListener("abort", onAbort, { once: true });
    }),
  ]);
  clearTimeout(timer);
  if (onAbort) signal.removeEventListener("abort", onAbort);
}

const exec: ToolSpec = {
  name: "exec",
  description:
    "Run a shell command as a managed session: answers run_command's record plus sessionId and status; status is running when it outlives yieldMs (or runs in the background), then use the process tool.",
  tier: "X",
  parameters: {
    type: "object",
    properties: {
      command: { type: "string", description: "The shell line." },
      cwd: { type: "string", description: "Working directory inside the workspace (default its root)." },
      yieldMs: { type: "integer", minimum: 0, default: 250, description: "How long to wait for the command before answering running." },
      background: { type: "boolean", default: false, description: "Answer at once; the command keeps running." },
      timeoutMs: { type: "integer", minimum: 0, default: 60000, description: "Killed after this many milliseconds; 0 disables." },
      pty: { type: "boolean", default: false, description: "Run under a pseudo-terminal (through script(1))." },
      host: { type: "string", default: "local", description: "Only local." },
    },
    required: ["command"],
  },
  async run(args, ctx) {
    const host = (args.host as string | undefined) ?? "local";
    if (host !== "local") throw new ToolError(`exec runs only on host 'local', not '${host}'`);
    const command = args.command as string;
    const cwd = prepare(ctx, command, args.cwd);
    const timeoutMs = (args.timeoutMs as number | undefined) ?? ctx.timeoutMs ?? 60_000;
    const pty = args.pty === true;
    const options = {
      cwd,
      env: childEnv(ctx.settings, pty ? { SHELL: "/bin/bash", TERM: process.env.TERM ?? "xterm" } : {}),
      maxChars: ctx.settings.maxOutputChars,
      keep: "tail" as const,
      timeoutMs,
      interactive: true,
    };
    const child = pty ? new Child("script", ["-qfec", command, "/dev/null"], options) : new Child("bash", bashArgs(command), options);
    const session = addSession(ownerOf(ctx), command, child);
    const yieldMs = args.background === true ? 0 : ((args.yieldMs as number | undefined) ?? 250);
    await waitFor(session, yieldMs, ctx.signal);
    session.readMark = child.output.written;
    return recordOf(session, child.output.output, child.output.truncated);
  },
};

const ACTIONS = ["list", "poll", "log", "write", "kill", "clear", "remove"] as const;

const processTool: ToolSpec = {
  name: "process",
  description:
    "Manage exec sessions: list; poll (new output, waiting up to yieldMs for the end); log (the output kept); write (input to stdin); kill; clear (finished sessions, running ones too with force); remove (one session; a running one needs force).",
  tier: "C",
  parameters: {
    type: "object",
    properties: {
      action: { type: "string", enum: [...ACTIONS], description: "What to do." },
      id: { type: "string", description: "The sessionId (poll, log, write, kill, remove)." },
      input: { type: "string", description: "Text written to stdin (write)." },
      yieldMs: { type: "integer", minimum: 0, default: 0, description: "poll: how long to wait for the command to end." },
      maxChars: { type: "integer", minimum: 1, default: 4000, description: "Output characters answered at most." },
      force: { type: "boolean", default: false, description: "clear, remove: also kill running sessions." },
    },
    required: ["action"],
  },
  async run(args, ctx) {
    const owner = ownerOf(ctx);
    const action = args.action as (typeof ACTIONS)[number];
    const maxChars = (args.maxChars as number | undefined) ?? 4000;
    const force = args.force === true;
    if (action === "list") {
      return sessionsOf(owner).map((s) => {
        const { output: _output, truncated: _truncated, ...record } = recordOf(s, "", false);
        return { ...record, command: s.command };
      });
    }
    if (action === "clear") {
      let removed = 0;
      for (const session of sessionsOf(owner)) {
        if (session.child.running && !force) continue;
        if (session.child.running) session.child.kill();
        dropSession(session.id);
        removed++;
      }
      return { removed };
    }
    if (typeof args.id !== "string" || args.id === "") throw new ToolError(`process ${action} needs an id`);
    const session = sessionOf(owner, args.id);
    if (!session) throw new ToolError(`no exec session '${args.id}'`);
    const { child } = session;
    switch (action) {
      case "poll": {
        await waitFor(session, (args.yieldMs as number | undefined) ?? 0, ctx.signal);
        const { text, lost } = child.output.since(session.readMark);
        const shown = text.slice(0, maxChars);
        session.readMark = child.output.written - (text.length - shown.length);
        return recordOf(session, shown, lost || shown.length < text.length);
      }
      case "log": {
        const text = child.output.output;
        return recordOf(session, text.slice(Math.max(0, text.length - maxChars)), child.output.truncated || text.length > maxChars);
      }
      case "write": {
        if (typeof args.input !== "string") throw new ToolError("process write needs input");
        if (!child.running || !child.write(args.input)) throw new ToolError(`exec session '${session.id}' is not running`);
        return recordOf(session, "", false);
      }
      case "kill": {
        if (child.running) {
          child.kill();
          await child.done;
        }
        return recordOf(session, "", false);
      }
      case "remove": {
        if (child.running && !force) throw new ToolError(`exec session '${session.id}' is running; kill it first or pass force`);
        if (child.running) {
          child.kill();
          await child.done;
        }
        dropSession(session.id);
        return { removed: 1 };
      }
      default:
        throw new ToolError(`unknown action '${action}'; one of ${ACTIONS.join(", ")}`);
    }
  },
};

export const shellTools: ToolSpec[] = [runCommand, exec, processTool];
