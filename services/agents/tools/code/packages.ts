// Packages of run_python and run_node, installed before the run into the run's own temporary
// directory (pip --target, put on PYTHONPATH; npm --prefix, found by require/import from there),
// from Tools:Runners:PipIndexUrl / NpmRegistry when set. Names are checked first (no options, paths
// or URLs); a failed install is an Error and the code does not run.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { childEnv, runChild, timeoutOf } from "../process/runner.js";
import { type ToolContext, ToolError } from "../tool.js";

const PYTHON_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?((==|>=|<=|~=|!=|>|<)[A-Za-z0-9.*+!_-]+)?$/;
const NODE_NAME = /^(@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*(@[A-Za-z0-9.^~<>=*+_-]+)?$/;

export function checkPackages(kind: "python" | "node", packages: readonly string[]): void {
  const pattern = kind === "python" ? PYTHON_NAME : NODE_NAME;
  for (const name of packages) {
    if (typeof name !== "string" || !pattern.test(name)) throw new ToolError(`'${name}' is not a package name`);
  }
}

let interpreter: Promise<string> | undefined;

/**
 * The Python interpreter's own path (`sys.executable`), asked of `python3` once. pip runs through it
 * rather than through `python3` on PATH: a version manager's shim (pyenv) runs a global "rehash"
 * after every `-m pip install`, under a lock other installs wait up to 60 s for, although an
 * install into a temporary directory adds no command to rehash.
 */
function pythonExecutable(ctx: ToolContext): Promise<string> {
  interpreter ??= promisify(execFile)("python3", ["-c", "import sys; print(sys.executable)"], {
    env: childEnv(ctx.settings),
    timeout: 30_000,
  })
    .then(({ stdout }) => stdout.trim() || "python3")
    .catch(() => "python3");
  return interpreter;
}

/** Installs `packages` into `dir`; answers the variables the run needs to find them. */
export async function installPackages(
  ctx: ToolContext,
  kind: "python" | "node",
  dir: string,
  packages: readonly string[],
): Promise<Record<string, string>> {
  if (packages.length === 0) return {};
  checkPackages(kind, packages);
  const runners = (ctx.settings.runners ?? {}) as { pipIndexUrl?: string; npmRegistry?: string };
  const target = join(dir, ".packages");
  const [file, args, env] =
    kind === "python"
      ? [
          await pythonExecutable(ctx),
          [
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
            "--retries",
            "0",
            "--target",
            target,
            ...(runners.pipIndexUrl ? ["--index-url", runners.pipIndexUrl] : []),
            ...packages,
          ],
          { PYTHONPATH: target },
        ]
      : [
          "npm",
          [
            "install",
            "--prefix",
            dir,
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--loglevel=error",
            ...(runners.npmRegistry ? ["--registry", runners.npmRegistry] : []),
            ...packages,
          ],
          {},
        ];
  const result = await runChild(file, args as string[], {
    cwd: dir,
    env: childEnv(ctx.settings, { PIP_NO_CACHE_DIR: "1" }),
    maxChars: ctx.settings.maxOutputChars,
    timeoutMs: timeoutOf({}, 300),
    signal: ctx.signal,
  });
  if (result.exitCode !== 0) {
    const tail = result.output.trim().split("\n").slice(-5).join("\n");
    throw new ToolError(
      `installing ${packages.join(", ")} failed${result.timedOut ? " (timed out)" : ""}: ${tail || `exit code ${result.exitCode}`}`,
    );
  }
  return env as Record<string, string>;
}
