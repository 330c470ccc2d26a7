// capture_screenshot: the screen (default) or a window by title, as a PNG at outputPath (in the
// workspace) or a temporary file. Linux: grim under Wayland; maim, scrot, ImageMagick's import or
// gnome-screenshot under X11 (a window: xdotool finds it, import or maim captures it); macOS:
// screencapture. No program, or no display, answers an Error naming what is missing.
import { randomUUID } from "node:crypto";
import { mkdir, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { type ToolContext, type ToolSpec, ToolError } from "../tool.js";
import { desktopEnvironment, findProgram, runProgram } from "./programs.js";

interface ScreenHelper {
  program: string;
  args: (out: string) => string[];
  needs?: "WAYLAND_DISPLAY" | "DISPLAY";
}

const LINUX_SCREEN: ScreenHelper[] = [
  { program: "grim", args: (out) => [out], needs: "WAYLAND_DISPLAY" },
  { program: "maim", args: (out) => [out], needs: "DISPLAY" },
  { program: "scrot", args: (out) => ["--overwrite", out], needs: "DISPLAY" },
  { program: "import", args: (out) => ["-window", "root", out], needs: "DISPLAY" },
  { program: "gnome-screenshot", args: (out) => ["-f", out], needs: "DISPLAY" },
];
const MAC_SCREEN: ScreenHelper[] = [{ program: "screencapture", args: (out) => ["-x", out] }];

type Env = Record<string, string | undefined>;

async function captureScreen(ctx: ToolContext, env: Env, out: string): Promise<string> {
  const helpers = process.platform === "darwin" ? MAC_SCREEN : LINUX_SCREEN;
  const installed = helpers.filter((h) => findProgram(h.program, env));
  if (installed.length === 0) throw new ToolError(`no screenshot program: install ${helpers.map((h) => h.program).join(", ")}`);
  const usable = installed.find((h) => !h.needs || env[h.needs]);
  if (!usable) {
    const needs = [...new Set(installed.map((h) => h.needs))].join(" or ");
    throw new ToolError(`no display to capture: ${needs} is not set (${installed.map((h) => h.program).join(", ")} installed)`);
  }
  await runProgram(findProgram(usable.program, env)!, usable.args(out), ctx, env);
  return usable.program;
}

async function captureWindow(ctx: ToolContext, env: Env, title: string, out: string): Promise<string> {
  const missing: string[] = [];
  const xdotool = findProgram("xdotool", env);
  if (!xdotool) missing.push("xdotool");
  const capture = ["import", "maim"].find((p) => findProgram(p, env));
  if (!capture) missing.push("ImageMagick (import) or maim");
  if (process.platform === "darwin" || missing.length > 0) {
    throw new ToolError(`capturing a window by title needs ${process.platform === "darwin" ? "X11 with xdotool" : missing.join(" and ")}`);
  }
  if (!env.DISPLAY) throw new ToolError("no display to capture: DISPLAY is not set");
  let ids: string[];
  try {
    ids = (await runProgram(xdotool!, ["search", "--name", title], ctx, env)).toString("utf8").split(/\s+/).filter(Boolean);
  } catch {
    ids = [];
  }
  if (ids.length === 0) throw new ToolError(`no window titled '${title}'`);
  const path = findProgram(capture!, env)!;
  await runProgram(path, capture === "import" ? ["-window", ids[0]!, out] : ["-i", ids[0]!, out], ctx, env);
  return capture!;
}

export const screenshotTools: ToolSpec[] = [
  {
    name: "capture_screenshot",
    description: "Capture the screen or a window (by title) as a PNG; answers { path, bytes, program }.",
    tier: "C",
    parameters: {
      type: "object",
      properties: {
        target: { type: "string", description: "screen (default) or a window title." },
        outputPath: { type: "string", description: "Where to write the PNG (in the workspace); a temporary file when omitted." },
      },
    },
    async run(args, ctx) {
      const target = typeof args.target === "string" && args.target.trim() !== "" ? args.target.trim() : "screen";
      const given = typeof args.outputPath === "string" && args.outputPath.trim() !== "" ? args.outputPath.trim() : undefined;
      const out = given ? ctx.services.workspace.resolve(given) : join(tmpdir(), `screenshot-${randomUUID()}.png`);
      await mkdir(dirname(out), { recursive: true });
      const env = desktopEnvironment(ctx);
      const program = target.toLowerCase() === "screen" ? await captureScreen(ctx, env, out) : await captureWindow(ctx, env, target, out);
      let bytes: number;
      try {
        bytes = (await stat(out)).size;
      } catch {
        throw new ToolError(`${program} wrote no file`);
      }
      return { path: given ? ctx.services.workspace.display(out) : out, bytes, program, target };
    },
  },
];
