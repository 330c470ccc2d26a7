// read_clipboard and write_clipboard: wl-clipboard (wl-paste, wl-copy) under Wayland, xclip or
// xsel under X11, pbpaste/pbcopy on macOS, PowerShell on Windows. Missing programs, or no display,
// answer an Error naming what is missing.
import { type ToolContext, type ToolSpec, ToolError } from "../tool.js";
import { desktopEnvironment, findProgram, runProgram } from "./programs.js";

interface Helper {
  /** What to install, as the Error names it. */
  package: string;
  read: [string, string[]];
  write: [string, string[]];
  /** The display variable it needs. */
  needs?: "WAYLAND_DISPLAY" | "DISPLAY";
}

const LINUX: Helper[] = [
  { package: "wl-clipboard", read: ["wl-paste", ["--no-newline"]], write: ["wl-copy", []], needs: "WAYLAND_DISPLAY" },
  {
    package: "xclip",
    read: ["xclip", ["-selection", "clipboard", "-o"]],
    write: ["xclip", ["-selection", "clipboard", "-i"]],
    needs: "DISPLAY",
  },
  { package: "xsel", read: ["xsel", ["--clipboard", "--output"]], write: ["xsel", ["--clipboard", "--input"]], needs: "DISPLAY" },
];
const MAC: Helper[] = [{ package: "pbcopy/pbpaste", read: ["pbpaste", []], write: ["pbcopy", []] }];
const WINDOWS: Helper[] = [
  {
    package: "PowerShell",
    read: ["powershell.exe", ["-NoProfile", "-Command", "Get-Clipboard -Raw"]],
    write: ["powershell.exe", ["-NoProfile", "-Command", "$input | Set-Clipboard"]],
  },
];

export function clipboardHelpers(platform: NodeJS.Platform = process.platform): Helper[] {
  return platform === "darwin" ? MAC : platform === "win32" ? WINDOWS : LINUX;
}

async function useClipboard(ctx: ToolContext, mode: "read" | "write", text?: string): Promise<string> {
  const env = desktopEnvironment(ctx);
  const helpers = clipboardHelpers();
  const installed = helpers.filter((h) => findProgram(h[mode][0], env));
  if (installed.length === 0) {
    throw new ToolError(
      `no clipboard program: install ${helpers
        .map((h) => h.package)
        .join(", ")
        .replace(/, ([^,]*)$/, " or $1")}`,
    );
  }
  const usable = installed.find((h) => !h.needs || env[h.needs]);
  if (!usable) {
    const needs = [...new Set(installed.map((h) => h.needs))].join(" or ");
    throw new ToolError(`no display for the clipboard: ${needs} is not set (${installed.map((h) => h.package).join(", ")} installed)`);
  }
  const [program, args] = usable[mode];
  const out = await runProgram(findProgram(program, env)!, args, ctx, env, text);
  return out.toString("utf8");
}

export const clipboardTools: ToolSpec[] = [
  {
    name: "read_clipboard",
    description: "Read the text on the system clipboard.",
    tier: "A",
    parameters: { type: "object", properties: {} },
    async run(_args, ctx) {
      return useClipboard(ctx, "read");
    },
  },
  {
    name: "write_clipboard",
    description: "Put text on the system clipboard.",
    tier: "C",
    parameters: { type: "object", properties: { text: { type: "string", description: "The text to copy." } }, required: ["text"] },
    async run(args, ctx) {
      const text = String(args.text);
      await useClipboard(ctx, "write", text);
      return `Copied ${text.length} characters to the clipboard.`;
    },
  },
];
