// Hot reload through a whole mesh: the agent gateway's appsettings.json rewritten while it runs.
// The rate limit and the providers change without a restart; a change to Gateway:Server:Verbose
// is logged as needing one and not applied; a broken file changes nothing.
import test from "ava";
import { mkdtempSync, rmSync } from "node:fs";
import { rename, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { type FakeOpenAi, startFakeOpenAi } from "../support/fake-openai.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

let mesh: TestMesh;
let first: FakeOpenAi;
let second: FakeOpenAi;
let dataDir: string;
const lines: { msg: string; settings?: string[] }[] = [];

const settingsFile = () => join(dataDir, "appsettings.json");
const appsettings = (perMinute: number, provider: FakeOpenAi, verbose = false) =>
  JSON.stringify({
    Gateway: { RateLimit: { MaxRequestsPerMinute: perMinute }, Server: { Verbose: verbose } },
    Providers: { fake: { BaseUrl: provider.url, ApiKey: provider.apiKey, Models: ["gpt-4o-mini"] } },
  });

test.before(async () => {
  first = await startFakeOpenAi();
  second = await startFakeOpenAi();
  dataDir = mkdtempSync(join(tmpdir(), "agents-reload-"));
  await writeFile(settingsFile(), appsettings(3, first));
  const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  mesh = await startTestMesh({ dataDir, logger, flags: [`--AgentGateway:DataDir=${dataDir}`] });
});

test.after.always(async () => {
  await mesh?.close();
  await first?.close();
  await second?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const get = (path: string) => fetch(`${mesh.frontUrl("agents")}${path}`);

test.serial(
  "Gateway:RateLimit:MaxRequestsPerMinute and Providers:* apply without a restart; Gateway:Server:Verbose waits for one",
  async (t) => {
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get("/api/providers")).status);
    t.deepEqual(statuses, [200, 200, 200, 429]);

    // Replaced by a rename, as editors and config management do; Verbose is not hot.
    await writeFile(`${settingsFile()}.tmp`, appsettings(1000, second, true));
    await rename(`${settingsFile()}.tmp`, settingsFile());
    const answer = await until(async () => {
      const res = await get("/api/providers");
      return res.status === 200 && res;
    }, "the raised limit");
    t.is(answer.headers.get("x-ratelimit-limit"), "1000");
    const [provider] = (await answer.json()) as { name: string; models: string[] }[];
    t.is(provider?.name, "fake");

    // The provider's new BaseUrl: a turn goes to the second fake.
    const agent = (await (await fetch(`${mesh.frontUrl("agents")}/api/agents`, { method: "POST" })).json()) as { id: string };
    const turn = await fetch(`${mesh.frontUrl("agents")}/api/agents/${agent.id}/message`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: "hello" }),
    });
    t.is(turn.status, 200);
    t.is(first.chatRequests().length, 0);
    t.is(second.chatRequests().length, 1);

    const restart = lines.find((l) => l.msg.includes("need a restart"));
    t.deepEqual(restart?.settings, ["Gateway:Server:Verbose"]);
  },
);

test.serial("a broken appsettings.json is logged and the running values stay", async (t) => {
  await writeFile(settingsFile(), "{ broken");
  await until(() => lines.some((l) => l.msg.includes("do not load")), "the warning");
  const res = await get("/api/providers");
  t.is(res.status, 200);
  t.is(res.headers.get("x-ratelimit-limit"), "1000");
});
