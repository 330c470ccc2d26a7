// `meshwork job --agent <name> --workflow <file>` as a batch Job runs it: the real CLI in a child
// process against the loopback OpenAI fake (real wire), on the embedded database or, in the real
// pass, a fresh database on the real PostgreSQL and the real NATS. A matching workflow exits 0, a
// non-matching one exits 1, both print the JSON report alone on stdout; an unknown agent or a bad
// workflow file exits 2 with one line on stderr.
import test from "ava";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeOpenAi, startFakeOpenAi } from "../support/fake-openai.js";
import { realInfra } from "../support/real-infra.js";
import { createTestDatabaseUrl } from "../support/test-database.js";

const bin = join(process.cwd(), "bin/meshwork.js");

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    // The settings come from flags alone: the parent's DATABASE_URL / NATS_URL are given as flags when set.
    const env = { ...process.env, DATABASE_URL: "", NATS_URL: "" };
    const child = spawn(process.execPath, [bin, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

/** A data directory, a database of its own in the real pass, and the settings flags of a job run. */
async function jobSetup(t: import("ava").ExecutionContext, fake: FakeOpenAi): Promise<{ dir: string; flags: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), "meshwork-job-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const infra = realInfra();
  const flags = [
    `--Data:Dir=${dir}`,
    `--AgentGateway:DataDir=${dir}/app`,
    "--AgentGateway:ProviderRetryBaseMs=1",
    `--Providers:fake:BaseUrl=${fake.url}`,
    `--Providers:fake:ApiKey=${fake.apiKey}`,
    "--Providers:fake:Models:0=gpt-4o-mini",
    "--Providers:fake:Models:1=gpt-4o",
    "--AgentGateway:Agents:reviewer:Provider=fake",
    "--AgentGateway:Agents:reviewer:Model=gpt-4o",
    "--AgentGateway:Agents:reviewer:SystemPrompt=You review changes.",
    "--Telemetry:Exporter=none",
  ];
  if (infra.databaseUrl) {
    const database = await createTestDatabaseUrl(infra.databaseUrl);
    t.teardown(() => database.drop());
    flags.push(`--Database:Url=${database.url}`);
  }
  if (infra.natsUrl) flags.push(`--Nats:Url=${infra.natsUrl}`);
  return { dir, flags };
}

function workflowFile(dir: string, workflow: unknown): string {
  const file = join(dir, `workflow-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, typeof workflow === "string" ? workflow : JSON.stringify(workflow));
  return file;
}

test.serial(
  "a workflow whose steps all match exits 0 and prints the report; the steps share one session with the agent's settings",
  async (t) => {
    const fake = await startFakeOpenAi();
    t.teardown(() => fake.close());
    fake.script = [
      { kind: "reply", content: ["Looks", " good."] },
      { kind: "reply", content: ["Ship", " it: 42"] },
    ];
    const { dir, flags } = await jobSetup(t, fake);
    const workflow = workflowFile(dir, {
      name: "smoke",
      steps: [
        { prompt: "Review the change", expect: "good" },
        { prompt: "Verdict?", expect: "^Ship.*\\d+$" },
        { prompt: "Anything else?" },
      ],
    });
    const out = await run(["job", "--agent", "reviewer", "--workflow", workflow, ...flags]);
    t.is(out.code, 0, out.stderr);
    const report = JSON.parse(out.stdout);
    t.deepEqual(report, {
      workflow: "smoke",
      agent: "reviewer",
      steps: [
        { prompt: "Review the change", response: "Looks good.", passed: true },
        { prompt: "Verdict?", response: "Ship it: 42", passed: true },
        { prompt: "Anything else?", response: "Hello from the fake.", passed: true },
      ],
      passed: true,
    });
    // One session: each turn carries the earlier ones, under the agent's system prompt and model.
    const chats = fake.chatRequests().map((r) => r.body as { model: string; messages: { role: string; content: string }[] });
    t.is(chats.length, 3);
    t.true(chats.every((c) => c.model === "gpt-4o"));
    t.deepEqual(chats[2]!.messages.slice(0, 5), [
      { role: "system", content: "You review changes." },
      { role: "user", content: "Review the change" },
      { role: "assistant", content: "Looks good." },
      { role: "user", content: "Verdict?" },
      { role: "assistant", content: "Ship it: 42" },
    ]);
  },
);

test.serial("a workflow with a step that does not match exits 1 and still prints the whole report", async (t) => {
  const fake = await startFakeOpenAi();
  t.teardown(() => fake.close());
  fake.script = [
    { kind: "reply", content: ["All", " fine."] },
    { kind: "reply", content: ["Not", " sure."] },
    { kind: "status", status: 400 },
  ];
  const { dir, flags } = await jobSetup(t, fake);
  const workflow = workflowFile(dir, {
    name: "strict",
    steps: [
      { prompt: "first", expect: "fine" },
      { prompt: "second", expect: "^definitely$" },
      { prompt: "third (the provider refuses it)" },
    ],
  });
  const out = await run(["job", "--agent", "reviewer", "--workflow", workflow, ...flags]);
  t.is(out.code, 1, out.stderr);
  const report = JSON.parse(out.stdout);
  t.is(report.workflow, "strict");
  t.is(report.agent, "reviewer");
  t.false(report.passed);
  t.deepEqual(
    report.steps.map((s: { prompt: string; response: string; passed: boolean }) => [s.prompt, s.response, s.passed]),
    [
      ["first", "All fine.", true],
      ["second", "Not sure.", false],
      ["third (the provider refuses it)", "", false],
    ],
  );
});

test.serial("an unknown agent, a bad workflow file or a missing option exits 2 with one line on stderr", async (t) => {
  const fake = await startFakeOpenAi();
  t.teardown(() => fake.close());
  const { dir, flags } = await jobSetup(t, fake);
  const good = workflowFile(dir, { name: "w", steps: [{ prompt: "hi" }] });
  const cases: [string[], RegExp][] = [
    [["--agent", "nobody", "--workflow", good], /Unknown agent 'nobody'.*AgentGateway:Agents:nobody.*configured: reviewer/],
    [["--agent", "reviewer", "--workflow", join(dir, "missing.json")], /Bad workflow file .*missing\.json: cannot be read/],
    [["--agent", "reviewer", "--workflow", workflowFile(dir, "{ not json")], /Bad workflow file .*: not JSON/],
    [["--agent", "reviewer", "--workflow", workflowFile(dir, { name: "w", steps: [] })], /"steps" must be a non-empty list/],
    [
      ["--agent", "reviewer", "--workflow", workflowFile(dir, { name: "w", steps: [{ prompt: "x", expect: "(" }] })],
      /steps\[0\]\.expect is not a valid regular expression/,
    ],
    [["--agent", "reviewer"], /needs --agent <name> and --workflow <file>/],
  ];
  const runs = await Promise.all(cases.map(([args]) => run(["job", ...args, ...flags])));
  for (const [i, out] of runs.entries()) {
    t.is(out.code, 2, `case ${i}: ${out.stderr}`);
    t.is(out.stdout, "", `case ${i}`);
    t.regex(out.stderr, cases[i]![1]);
    t.is(out.stderr.trim().split("\n").length, 1, `case ${i}: ${out.stderr}`);
  }
  t.is(fake.chatRequests().length, 0);
});
