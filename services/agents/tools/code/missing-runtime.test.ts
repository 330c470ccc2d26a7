// execute_code with a runtime that is not on PATH answers `Error: <runtime> is not installed`
// (PATH here is an empty directory, so dotnet, pwsh and python3 are all missing).
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { testToolContext, toolNamed } from "../testing.js";
import { ToolError } from "../tool.js";
import { codeFamily } from "./index.js";

process.env.PATH = await mkdtemp(join(tmpdir(), "empty-path-"));

for (const [language, runtime] of [
  ["csharp", "dotnet"],
  ["powershell", "pwsh"],
  ["python", "python3"],
]) {
  test(`execute_code ${language} without ${runtime} answers that it is not installed`, async (t) => {
    const ctx = await testToolContext();
    await t.throwsAsync(toolNamed(codeFamily, "execute_code").run({ language, code: "x" }, ctx), {
      instanceOf: ToolError,
      message: `${runtime} is not installed`,
    });
  });
}
