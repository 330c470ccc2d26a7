// The worker pool (Workers:*): with Workers:Enabled the agents service queues its turns on a
// JetStream stream and `meshwork worker` pools, sharing one durable consumer, run them. Needs a
// real NATS (and PostgreSQL, which the service and the workers share): in the real pass two pools
// in this process, each with a provider of its own, answer every turn exactly once between them;
// a turn sent while no worker runs waits for one. On both passes: Workers:Enabled and `meshwork
// worker` without NATS stop with a message naming the setting.
import test from "ava";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { connect } from "nats";
import { loadMeshConfig } from "../../services/mesh-config.js";
import { startMesh } from "../../services/mesh.js";
import { startWorkerPool, type WorkerPool } from "../../services/mesh-pool.js";
import { ConfigError } from "../../services/runtime/config/index.js";
import { createLogger } from "../../services/runtime/logging/index.js";
import { call, providerFlags } from "../support/agents-mesh.js";
import { startFakeOpenAi } from "../support/fake-openai.js";
import { realInfra, realServers } from "../support/real-infra.js";
import { createTestDatabaseUrl } from "../support/test-database.js";
import { startTestMesh } from "../support/start-mesh.js";
import { until } from "../support/until.js";

const logger = createLogger({ level: process.env.MESHWORK_TEST_LOG ?? "silent" });
const bin = join(process.cwd(), "bin/meshwork.js");

test("Workers:Enabled without NATS stops start-up naming the setting and NATS_URL", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "meshwork-workers-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const config = loadMeshConfig({
    env: {},
    cwd: dir,
    flags: [
      `--Data:Dir=${dir}`,
      `--AgentGateway:DataDir=${dir}/app`,
      "--Services:Port=0",
      "--Gateway:Server:Port=0",
      "--Workers:Enabled=true",
    ],
  });
  const error = await t.throwsAsync(startMesh({ config, logger, mode: { kind: "service", name: "agents" } }), { instanceOf: ConfigError });
  t.regex(error!.message, /^Workers:Enabled needs NATS_URL \/ Nats:Url/);
  await t.throwsAsync(startWorkerPool({ config, logger }), { instanceOf: ConfigError, message: /`meshwork worker` needs NATS_URL/ });
});

test("`meshwork worker` without NATS exits 2 naming NATS_URL; a Workers:Transport other than nats exits 2 naming it", async (t) => {
  const env = { ...process.env, DATABASE_URL: "", NATS_URL: "" };
  const run = (args: string[]) =>
    new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [bin, ...args], { env, stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      child.stderr.on("data", (d) => (stderr += d));
      child.on("error", reject);
      child.on("exit", (code) => resolve({ code, stderr }));
    });
  const [noNats, transport] = await Promise.all([
    run(["worker", "--Telemetry:Exporter=none"]),
    run(["worker", "--Telemetry:Exporter=none", "--Workers:Transport=redis"]),
  ]);
  t.is(noNats.code, 2);
  t.regex(noNats.stderr, /`meshwork worker` needs NATS_URL \/ Nats:Url/);
  t.is(transport.code, 2);
  t.regex(transport.stderr, /Invalid setting Workers:Transport/);
});

if (realServers(test, "the worker pool on JetStream", ["postgres", "nats"])) {
  test.serial("`meshwork worker` as the chart runs it: pulls from the stream until SIGTERM, then exits 0", async (t) => {
    const infra = realInfra();
    const dir = mkdtempSync(join(tmpdir(), "meshwork-workers-"));
    const database = await createTestDatabaseUrl(infra.databaseUrl!);
    const streamKey = `AGENT_WORK_C${randomUUID().replaceAll("-", "").slice(0, 12)}`;
    t.teardown(async () => {
      await database.drop();
      const nc = await connect({ servers: infra.natsUrl! });
      await (await nc.jetstreamManager()).streams.delete(streamKey).catch(() => undefined);
      await nc.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const child = spawn(
      process.execPath,
      [
        bin,
        "worker",
        `--Data:Dir=${dir}`,
        `--AgentGateway:DataDir=${dir}/app`,
        "--Telemetry:Exporter=none",
        "--Gateway:Telemetry:Enabled=false",
      ],
      {
        env: {
          ...process.env,
          DATABASE_URL: database.url,
          NATS_URL: infra.natsUrl!,
          Workers__Enabled: "true",
          Workers__Transport: "nats",
          Workers__StreamKey: streamKey,
          Workers__ConsumerGroup: "agent-workers",
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    t.teardown(() => child.kill("SIGKILL"));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    let up = false;
    for await (const line of createInterface({ input: child.stdout })) {
      const entry = JSON.parse(line) as { msg: string; workers?: string[] };
      if (entry.msg === "worker pool running") t.true(entry.workers?.some((w) => w.includes(`${streamKey}/agent-workers`)));
      if (entry.msg === "meshwork is up") {
        up = true;
        break;
      }
    }
    t.true(up, stderr);
    // The durable consumer exists on the stream the settings name.
    const nc = await connect({ servers: infra.natsUrl! });
    t.teardown(() => nc.close());
    const info = await (await nc.jetstreamManager()).consumers.info(streamKey, "agent-workers");
    t.is(info.config.filter_subject, `${streamKey}.turns`);
    child.kill("SIGTERM");
    t.is(await exited, 0, stderr);
  });

  test.serial(
    "two workers sharing a consumer group answer every turn exactly once between them; a turn waits while no worker runs",
    async (t) => {
      const dirs = [0, 1, 2].map(() => mkdtempSync(join(tmpdir(), "meshwork-workers-")));
      const [fake0, fake1, fake2] = await Promise.all([startFakeOpenAi(), startFakeOpenAi(), startFakeOpenAi()]);
      // A stream of this test's own on the shared NATS server.
      const streamKey = `AGENT_WORK_T${randomUUID().replaceAll("-", "").slice(0, 12)}`;
      const workerFlags = [`--Workers:StreamKey=${streamKey}`, "--Workers:ConsumerGroup=agent-workers"];
      const mesh = await startTestMesh({ flags: [...providerFlags(fake0, dirs[0]!), "--Workers:Enabled=true", ...workerFlags] });
      const pools: WorkerPool[] = [];
      t.teardown(async () => {
        for (const pool of pools) await pool.close();
        await mesh.close();
        const nc = await connect({ servers: mesh.config.runtime.nats.url! });
        await (await nc.jetstreamManager()).streams.delete(streamKey).catch(() => undefined);
        await nc.close();
        await Promise.all([fake0.close(), fake1.close(), fake2.close()]);
        for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
      });
      const base = mesh.frontUrl("agents");
      const agents: string[] = [];
      for (let i = 0; i < 6; i++) {
        const spawned = await call(base, "POST", "/api/agents", {});
        t.is(spawned.status, 201, JSON.stringify(spawned.body));
        agents.push(spawned.body.id);
      }

      // No worker yet: the turn is queued and waits.
      let earlySettled = false;
      const early = call(base, "POST", `/api/agents/${agents[0]}/message`, { message: "early" }).finally(() => {
        earlySettled = true;
      });
      await until(async () => (await mesh.bus!.streamInfo(streamKey)).lastSeq >= 1, "the first turn job in the stream");
      t.false(earlySettled, "a turn was answered with no worker running");

      // Worker one's first turn is held until worker two has taken one: both must take part.
      fake1.script = [
        { kind: "reply", content: ["one", " (held)"], waitFor: until(() => fake2.chatRequests().length > 0, "worker two's turn") },
      ];
      fake1.fallback = { kind: "reply", content: ["one"] };
      fake2.fallback = { kind: "reply", content: ["two"] };
      for (const [i, fake] of [fake1, fake2].entries()) {
        const dir = dirs[i + 1]!;
        const config = loadMeshConfig({
          env: {},
          cwd: dir,
          flags: [
            `--Data:Dir=${dir}`,
            `--Database:Url=${mesh.config.runtime.database.url}`,
            `--Nats:Url=${mesh.config.runtime.nats.url}`,
            "--Telemetry:Exporter=none",
            "--Gateway:Telemetry:Enabled=false",
            ...providerFlags(fake, dir),
            ...workerFlags,
          ],
        });
        pools.push(await startWorkerPool({ config, logger }));
      }

      const rest = agents.slice(1).map((id, i) => call(base, "POST", `/api/agents/${id}/message`, { message: `turn ${i + 1}` }));
      const answers = await Promise.all([early, ...rest]);
      for (const answer of answers) t.is(answer.status, 200, JSON.stringify(answer.body));
      const responses = answers.map((a) => a.body.response as string);
      // Each turn ran once, on one worker: six provider calls between the two, none by the service.
      t.is(fake1.chatRequests().length + fake2.chatRequests().length, 6);
      t.is(fake0.chatRequests().length, 0);
      t.true(
        fake1.chatRequests().length > 0 && fake2.chatRequests().length > 0,
        `${fake1.chatRequests().length} / ${fake2.chatRequests().length}`,
      );
      t.is(responses.filter((r) => r.startsWith("one")).length, fake1.chatRequests().length);
      t.is(responses.filter((r) => r === "two").length, fake2.chatRequests().length);
      // The messages reached the provider as sent, each once.
      const sent = [...fake1.chatRequests(), ...fake2.chatRequests()]
        .map((r) => (r.body as { messages: { role: string; content: string }[] }).messages.at(-1)!.content)
        .sort();
      t.deepEqual(sent, ["early", "turn 1", "turn 2", "turn 3", "turn 4", "turn 5"]);
      for (const id of agents) t.is((await call(base, "GET", `/api/agents/${id}`)).body.turnCount, 1);

      // A refusal on the worker comes back to the caller as it would in process.
      const missing = await call(base, "POST", `/api/agents/${randomUUID()}/message`, { message: "anyone?" });
      t.is(missing.status, 404, JSON.stringify(missing.body));
      // An empty message is refused by the service without queueing.
      const empty = await call(base, "POST", `/api/agents/${agents[1]}/message`, { message: "" });
      t.is(empty.status, 400, JSON.stringify(empty.body));
    },
  );
}
