// execute_code and the sandboxed runners run_python, run_node, run_bash. The source goes to a
// fresh directory under the system temp directory, removed after the run. execute_code runs in the
// workspace root; a runner runs in its fresh directory unless given a (jailed) cwd. Bash code passes
// the shell rules first. Every one answers { exitCode, output, timedOut, truncated, durationMs }.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { childEnv, runChild, timeoutOf } from "../process/runner.js";
import { checkShellLine, shellRulesOf } from "../shell/rules.js";
import { type ToolContext, ToolError, type ToolSpec } from "../tool.js";
import { RUNTIMES, requireInstalled } from "./languages.js";
import { installPackages } from "./packages.js";

interface Run {
  language: keyof typeof RUNTIMES;
  code: string;
  args?: string[];
  /** A jailed directory; else the run's fresh directory (runners) or the workspace root (execute_code). */
  cwd?: string;
  fresh: boolean;
  timeoutSeconds: number;
  packages?: string[];
  env?: Record<string, string>;
}

async function runCode(ctx: ToolContext, run: Run) {
  const runtime = RUNTIMES[run.language];
  if (!runtime) throw new ToolError(`unknown language '${run.language}'`);
  const env = childEnv(ctx.settings, run.env);
  requireInstalled(runtime.program, env.PATH);
  if (run.language === "bash") checkShellLine(run.code, shellRulesOf(ctx.settings));
  const jailed = run.cwd !== undefined ? ctx.services.workspace.resolve(run.cwd) : undefined;
  const dir = await mkdtemp(join(tmpdir(), "tool-run-"));
  try {
    const cwd = jailed ?? (run.fresh ? dir : ctx.services.workspace.root);
    const packageEnv =
      run.packages && run.packages.length > 0 ? await installPackages(ctx, run.language as "python" | "node", dir, run.packages) : {};
    const [file, ...args] = await runtime.prepare(dir, run.code, run.args ?? []);
    return {
      ...(await runChild(file as string, args, {
        cwd,
        env: { ...env, ...packageEnv },
        maxChars: ctx.settings.maxOutputChars,
        timeoutMs: timeoutOf(ctx, run.timeoutSeconds),
        signal: ctx.signal,
      })),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const executeCode: ToolSpec = {
  name: "execute_code",
  description:
    "Run a snippet of python, node or bash (csharp with dotnet, powershell with pwsh, when installed) in the workspace. Answers { exitCode, output, timedOut, truncated, durationMs }.",
  tier: "X",
  parameters: {
    type: "object",
    properties: {
      language: { type: "string", enum: ["csharp", "python", "node", "bash", "powershell"], description: "The language." },
      code: { type: "string", description: "The source." },
      timeoutSeconds: {
        type: "integer",
        minimum: 1,
        maximum: 300,
        default: 30,
        description: "Killed after this many seconds (at most 300).",
      },
    },
    required: ["language", "code"],
  },
  run: (args, ctx) =>
    runCode(ctx, {
      language: args.language as string,
      code: args.code as string,
      fresh: false,
      timeoutSeconds: Math.min((args.timeoutSeconds as number | undefined) ?? 30, 300),
    }),
};

const common = {
  args: { type: "array" as const, items: { type: "string" as const }, description: "Command-line arguments." },
  cwd: { type: "string" as const, description: "Working directory inside the workspace (default a fresh temporary directory)." },
  timeoutSeconds: { type: "integer" as const, minimum: 1, default: 60, description: "Killed after this many seconds." },
};

function runner(language: "python" | "node"): ToolSpec {
  return {
    name: `run_${language}`,
    description: `Run a ${language === "python" ? "Python 3" : "Node.js"} program in a fresh temporary directory (or cwd); packages are installed first. Answers { exitCode, output, timedOut, truncated, durationMs }.`,
    tier: "X",
    parameters: {
      type: "object",
      properties: {
        code: { type: "string", description: "The program." },
        ...common,
        packages: {
          type: "array",
          items: { type: "string" },
          description: `${language === "python" ? "pip" : "npm"} packages installed before the run.`,
        },
      },
      required: ["code"],
    },
    run: (args, ctx) =>
      runCode(ctx, {
        language,
        code: args.code as string,
        args: args.args as string[] | undefined,
        cwd: args.cwd as string | undefined,
        fresh: true,
        timeoutSeconds: (args.timeoutSeconds as number | undefined) ?? 60,
        packages: args.packages as string[] | undefined,
      }),
  };
}

const runBash: ToolSpec = {
  name: "run_bash",
  description:
    "Run a bash script in a fresh temporary directory (or cwd), with extra environment variables. Answers { exitCode, output, timedOut, truncated, durationMs }.",
  tier: "X",
  parameters: {
    type: "object",
    properties: {
      script: { type: "string", description: "The script." },
      cwd: common.cwd,
      timeoutSeconds: common.timeoutSeconds,
      env: { type: "object", additionalProperties: { type: "string" }, description: "Environment variables added for the script." },
    },
    required: ["script"],
  },
  async run(args, ctx) {
    const env = (args.env ?? {}) as Record<string, unknown>;
    for (const [name, value] of Object.entries(env)) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new ToolError(`env: '${name}' is not a variable name`);
      if (typeof value !== "string") throw new ToolError(`env.${name} must be a string`);
    }
    return runCode(ctx, {
      language: "bash",
      code: args.script as string,
      cwd: args.cwd as string | undefined,
      fresh: true,
      timeoutSeconds: (args.timeoutSeconds as number | undefined) ?? 60,
      env: env as Record<string, string>,
    });
  },
};

export const codeTools: ToolSpec[] = [executeCode, runner("python"), runner("node"), runBash];
