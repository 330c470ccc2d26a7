// The runtimes execute_code and the runners start: the program, how a source file is run, and
// whether the program is on PATH (dotnet and pwsh are optional: `Error: <runtime> is not installed`).
import { accessSync, constants } from "node:fs";
import { writeFile } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { ToolError } from "../tool.js";

export interface Runtime {
  /** The program looked up on PATH. */
  program: string;
  /** Writes `code` into `dir` and answers the command line running it. */
  prepare(dir: string, code: string, args: readonly string[]): Promise<string[]>;
}

export const RUNTIMES: Record<string, Runtime> = {
  python: {
    program: "python3",
    async prepare(dir, code, args) {
      await writeFile(join(dir, "main.py"), code);
      return ["python3", join(dir, "main.py"), ...args];
    },
  },
  node: {
    program: "node",
    async prepare(dir, code, args) {
      await writeFile(join(dir, "main.js"), code);
      return ["node", join(dir, "main.js"), ...args];
    },
  },
  bash: {
    program: "bash",
    async prepare(dir, code, args) {
      await writeFile(join(dir, "main.sh"), code);
      return ["bash", join(dir, "main.sh"), ...args];
    },
  },
  csharp: {
    program: "dotnet",
    async prepare(dir, code, args) {
      await writeFile(
        join(dir, "main.csproj"),
        '<Project Sdk="Microsoft.NET.Sdk"><PropertyGroup><OutputType>Exe</OutputType><TargetFramework>net8.0</TargetFramework><ImplicitUsings>enable</ImplicitUsings><Nullable>enable</Nullable></PropertyGroup></Project>\n',
      );
      await writeFile(join(dir, "Program.cs"), code);
      return ["dotnet", "run", "--project", join(dir, "main.csproj"), "--", ...args];
    },
  },
  powershell: {
    program: "pwsh",
    async prepare(dir, code, args) {
      await writeFile(join(dir, "main.ps1"), code);
      return ["pwsh", "-NoProfile", "-NonInteractive", "-File", join(dir, "main.ps1"), ...args];
    },
  },
};

/** ToolError `<program> is not installed` unless `program` is an executable on `path`. */
export function requireInstalled(program: string, path: string | undefined): void {
  for (const dir of (path ?? "").split(delimiter)) {
    if (dir === "") continue;
    try {
      accessSync(join(dir, program), constants.X_OK);
      return;
    } catch {
      // Not in this directory.
    }
  }
  throw new ToolError(`${program} is not installed`);
}
