// execute_code and the runners: languages, working directories, temporary files removed, timeouts,
// the shell rules for bash, run_bash's env, and packages installed from a loopback package index
// (a real PEP 503 index serving a wheel built here; a missing package is an Error, no network used).
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { type TestToolContext, testToolContext, toolNamed } from "../testing.js";
import { PolicyBlock, ToolError } from "../tool.js";
import { codeFamily } from "./index.js";

const run = (name: string, args: Record<string, unknown>, ctx: TestToolContext) =>
  toolNamed(codeFamily, name).run(args, ctx) as Promise<{
    exitCode: number;
    output: string;
    timedOut: boolean;
    truncated: boolean;
    durationMs: number;
  }>;

test("execute_code runs python, node and bash in the workspace and answers the run record", async (t) => {
  const ctx = await testToolContext();
  const python = await run("execute_code", { language: "python", code: "import os, sys\nprint(os.getcwd())\nsys.exit(3)" }, ctx);
  t.deepEqual(Object.keys(python).sort(), ["durationMs", "exitCode", "output", "timedOut", "truncated"]);
  t.is(python.output, `${ctx.workspace.root}\n`);
  t.is(python.exitCode, 3);
  t.is((await run("execute_code", { language: "node", code: "console.log(6 * 7)" }, ctx)).output, "42\n");
  t.is((await run("execute_code", { language: "bash", code: "echo $((6 * 7)) >&2" }, ctx)).output, "42\n");
});

test("execute_code removes its temporary files and kills code over the timeout", async (t) => {
  const ctx = await testToolContext();
  const file = (await run("execute_code", { language: "python", code: "print(__file__)" }, ctx)).output.trim();
  t.true(file.startsWith(tmpdir()));
  t.false(existsSync(file));
  const slow = await run("execute_code", { language: "bash", code: "echo started; sleep 30", timeoutSeconds: 1 }, ctx);
  t.true(slow.timedOut);
  t.is(slow.output, "started\n");
});

test("bash code passes the shell rules first", async (t) => {
  const ctx = await testToolContext({ settings: { shell: { deny: ["curl"], allow: [], passEnv: [] } } });
  await t.throwsAsync(run("execute_code", { language: "bash", code: "echo hi\ncurl http://x" }, ctx), {
    instanceOf: PolicyBlock,
    message: "'curl' is not allowed",
  });
  await t.throwsAsync(run("run_bash", { script: "x=$(curl http://x)" }, ctx), {
    instanceOf: PolicyBlock,
    message: "'curl' is not allowed",
  });
});

test("runners use a fresh temporary directory, removed afterwards, unless given a cwd in the workspace", async (t) => {
  const ctx = await testToolContext();
  const fresh = await run("run_python", { code: "import os\nopen('out.txt','w').write('x')\nprint(os.getcwd())" }, ctx);
  const dir = fresh.output.trim();
  t.true(dir.startsWith(tmpdir()));
  t.false(dir.startsWith(ctx.workspace.root));
  t.false(existsSync(dir));
  await mkdir(join(ctx.workspace.root, "work"));
  await run(
    "run_node",
    { code: "require('fs').writeFileSync('out.txt', process.argv.slice(2).join(','))", args: ["a", "b c"], cwd: "work" },
    ctx,
  );
  t.is(await readFile(join(ctx.workspace.root, "work/out.txt"), "utf8"), "a,b c");
  await t.throwsAsync(run("run_python", { code: "print(1)", cwd: "../.." }, ctx), {
    instanceOf: PolicyBlock,
    message: /outside the workspace/,
  });
});

test("run_bash adds its env to the filtered environment", async (t) => {
  const ctx = await testToolContext();
  process.env.MESHWORK_CODE_TEST_SECRET = "hidden";
  t.teardown(() => delete process.env.MESHWORK_CODE_TEST_SECRET);
  const result = await run("run_bash", { script: 'echo "$GREETING/$MESHWORK_CODE_TEST_SECRET."', env: { GREETING: "hello" } }, ctx);
  t.is(result.output, "hello/.\n");
  await t.throwsAsync(run("run_bash", { script: "true", env: { "BAD NAME": "x" } }, ctx), {
    instanceOf: ToolError,
    message: "env: 'BAD NAME' is not a variable name",
  });
});

/** A PEP 503 package index on loopback serving one wheel, `tinypkg` 1.0. */
async function packageIndex(): Promise<{ url: string; server: Server }> {
  const dir = await mkdtemp(join(tmpdir(), "wheel-"));
  const wheel = join(dir, "tinypkg-1.0-py3-none-any.whl");
  execFileSync("python3", [
    "-c",
    `import zipfile
with zipfile.ZipFile(${JSON.stringify(wheel)}, "w") as z:
    z.writestr("tinypkg.py", "VALUE = 42\\n")
    z.writestr("tinypkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\\nName: tinypkg\\nVersion: 1.0\\n")
    z.writestr("tinypkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
    z.writestr("tinypkg-1.0.dist-info/RECORD", "tinypkg.py,,\\ntinypkg-1.0.dist-info/METADATA,,\\ntinypkg-1.0.dist-info/WHEEL,,\\ntinypkg-1.0.dist-info/RECORD,,\\n")
`,
  ]);
  const body = await readFile(wheel);
  const server = createServer((request, response) => {
    if (request.url === "/simple/tinypkg/") {
      response.setHeader("content-type", "text/html");
      response.end('<html><body><a href="/files/tinypkg-1.0-py3-none-any.whl">tinypkg-1.0-py3-none-any.whl</a></body></html>');
    } else if (request.url === "/files/tinypkg-1.0-py3-none-any.whl") response.end(body);
    else {
      response.statusCode = 404;
      response.end("not found");
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/simple`, server };
}

test("run_python installs packages from Tools:Runners:PipIndexUrl before the run; a failed install is an Error", async (t) => {
  const index = await packageIndex();
  t.teardown(() => index.server.close());
  const ctx = await testToolContext({ settings: { runners: { pipIndexUrl: index.url } } });
  const result = await run("run_python", { code: "import tinypkg\nprint(tinypkg.VALUE)", packages: ["tinypkg==1.0"] }, ctx);
  t.is(result.output, "42\n");
  t.is(result.exitCode, 0);
  await t.throwsAsync(run("run_python", { code: "print('never')", packages: ["no-such-package"] }, ctx), {
    instanceOf: ToolError,
    message: /^installing no-such-package failed/,
  });
});

test("package names that are options, paths or URLs are refused before anything runs", async (t) => {
  const ctx = await testToolContext();
  for (const name of ["--index-url=http://evil", "../local", "git+https://x/y", "a b"]) {
    await t.throwsAsync(run("run_python", { code: "print(1)", packages: [name] }, ctx), {
      instanceOf: ToolError,
      message: `'${name}' is not a package name`,
    });
    await t.throwsAsync(run("run_node", { code: "1", packages: [name] }, ctx), {
      instanceOf: ToolError,
      message: `'${name}' is not a package name`,
    });
  }
});

test("run_node installs from Tools:Runners:NpmRegistry; a package the registry lacks is an Error", async (t) => {
  const registry = createServer((_request, response) => {
    response.statusCode = 404;
    response.setHeader("content-type", "application/json");
    response.end('{"error":"not found"}');
  });
  await new Promise<void>((resolve) => registry.listen(0, "127.0.0.1", resolve));
  t.teardown(() => registry.close());
  const ctx = await testToolContext({
    settings: { runners: { npmRegistry: `http://127.0.0.1:${(registry.address() as AddressInfo).port}/` } },
  });
  await t.throwsAsync(run("run_node", { code: "console.log('never')", packages: ["no-such-package"] }, ctx), {
    instanceOf: ToolError,
    message: /^installing no-such-package failed/,
  });
});
