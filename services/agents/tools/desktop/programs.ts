// Finding and running the desktop helpers (clipboard and screenshot programs): looked up on PATH
// without a shell, run with a timeout, stdin written when given, stdout kept as bytes.
import { spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { basename, delimiter, join } from "node:path";
import { type ToolContext, ToolError } from "../tool.js";

export const DESKTOP_TIMEOUT_MS = 10_000;
const MAX_STDOUT = 16 * 1024 * 1024;

/** The process environment, or `services.environment` when a test gives one. */
export function desktopEnvironment(ctx: ToolContext): Record<string, string | undefined> {
  return ctx.services.environment ?? process.env;
}

/** The absolute path of `program` on the environment's PATH, or undefined. */
export function findProgram(program: string, env: Record<string, string | undefined>): string | undefined {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, program);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The variables a desktop helper needs to reach the display, and nothing else. */
function childEnvironment(env: Record<string, string | undefined>): Record<string, string> {
  const names = ["PATH", "HOME", "LANG", "DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS"];
  return Object.fromEntries(names.filter((name) => env[name] !== undefined).map((name) => [name, env[name]!]));
}

export async function runProgram(
  path: string,
  args: string[],
  ctx: ToolContext,
  env: Record<string, string | undefined>,
  input?: string,
): Promise<Buffer> {
  const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(ctx.timeoutMs ?? DESKTOP_TIMEOUT_MS)]);
  const name = basename(path);
  return new Promise((resolve, reject) => {
    const child = spawn(path, args, { env: childEnvironment(env), stdio: ["pipe", "pipe", "pipe"], signal });
    const out: Buffer[] = [];
    let size = 0;
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_STDOUT) out.push(chunk);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < 2000) stderr += chunk.toString("utf8");
    });
    child.on("error", (error) => {
      reject(new ToolError(signal.aborted ? `${name} timed out` : `${name} could not run: ${error.message}`));
    });
    child.on("close", (code) => {
      if (code === 0) resolve(Buffer.concat(out));
      else reject(new ToolError(`${name} failed (exit ${code})${stderr.trim() ? `: ${stderr.trim().split("\n")[0]}` : ""}`));
    });
    child.stdin.on("error", () => {});
    child.stdin.end(input ?? "");
  });
}
