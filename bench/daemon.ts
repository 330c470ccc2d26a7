// `npm run bench:daemon`: the wall time of `app-daemon status --json` against a running daemon,
// process start included, as an operator or a monitoring script runs it. The daemon runs as
// `app-daemon run` in a child process (the whole mesh on the embedded database, every port free,
// its control socket in a temporary `AgentGateway:DataDir`). Measured in turns, in the same run:
//   status    `node bin/app-daemon.js status --json` until it exits (it asks the control socket);
//   node      `node -e 0`, the floor any Node.js command pays to start.
// Target: status under 300 ms at p50 (p99 printed). `--quick` is a smoke run, not figures.
// A benchmark, not a test.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { stopChild } from "./children.js";
import { backgroundLoad } from "./cpu.js";
import { percentile } from "./load.js";

const quick = process.argv.includes("--quick");
const ROUNDS = quick ? { warmup: 2, measured: 10 } : { warmup: 5, measured: 50 };
const TARGET_P50_MS = 300;
const bin = fileURLToPath(new URL("../bin/app-daemon.js", import.meta.url));

/** Runs a command to its end; answers its wall time, its exit code and stdout. */
function timed(args: string[], env: NodeJS.ProcessEnv): Promise<{ ms: number; code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ ms: performance.now() - started, code, out }));
  });
}

async function main(): Promise<void> {
  const background = await backgroundLoad(1_000);
  const load = loadavg();
  const base = mkdtempSync(join(tmpdir(), "meshwork-bench-daemon-"));
  const dataDir = join(base, "app");
  const env = { PATH: process.env.PATH, HOME: base };
  const placeFlags = [`--AgentGateway:DataDir=${dataDir}`, "--Daemon:ServiceManager=process"];
  const daemon = spawn(
    process.execPath,
    [
      bin,
      "run",
      ...placeFlags,
      `--Data:Dir=${join(base, "data")}`,
      "--Services:Port=0",
      "--Fronts:Tracking:Port=0",
      "--Fronts:Protection:Port=0",
      "--Gateway:Server:Port=0",
      "--Daemon:HealthPort=0",
      "--Telemetry:Exporter=none",
      "--Gateway:Telemetry:Enabled=false",
      "--Logging:Level=warn",
      "--Protection:TorExits:SourceUrl=http://127.0.0.1:9/none",
    ],
    { env, stdio: ["ignore", "ignore", "inherit"] },
  );
  try {
    const status = () => timed([bin, "status", "--json", ...placeFlags], env);
    const deadline = Date.now() + 120_000;
    for (;;) {
      const answer = await status();
      if (answer.code === 0 && (JSON.parse(answer.out) as { state: string }).state === "running") break;
      if (daemon.exitCode !== null) throw new Error(`app-daemon run exited (${daemon.exitCode}) before it was running`);
      if (Date.now() > deadline) throw new Error(`the daemon was not running within 120 s (status: ${answer.out.trim()})`);
    }

    const statusMs: number[] = [];
    const nodeMs: number[] = [];
    for (let round = 0; round < ROUNDS.warmup + ROUNDS.measured; round++) {
      const answer = await status();
      if (answer.code !== 0) throw new Error(`status exited ${answer.code}: ${answer.out.trim()}`);
      const floor = await timed(["-e", "0"], env);
      if (round < ROUNDS.warmup) continue;
      statusMs.push(answer.ms);
      nodeMs.push(floor.ms);
    }
    const s = Float64Array.from(statusMs).sort();
    const n = Float64Array.from(nodeMs).sort();
    const p50 = percentile(s, 50);

    const cpu = cpus();
    console.log(
      `\n${cpu.length} × ${cpu[0]?.model.trim()}, Node ${process.version}${quick ? " (--quick: short runs, not figures)" : ""}; ` +
        `load average ${load.map((l) => l.toFixed(2)).join(" ")}; background load before the run ${(background * 100).toFixed(0)} % (${background < 0.1 ? "quiet" : "busy"})\n`,
    );
    console.log("| Measure | p50 | p99 | Target | |\n|---|---|---|---|---|");
    console.log(
      `| \`app-daemon status --json\`, running daemon (${s.length} runs) | ${p50.toFixed(0)} ms | ${percentile(s, 99).toFixed(0)} ms | < ${TARGET_P50_MS} ms | ${p50 < TARGET_P50_MS ? "met" : "not met"} |`,
    );
    console.log(`| \`node -e 0\` (Node.js start alone) | ${percentile(n, 50).toFixed(0)} ms | ${percentile(n, 99).toFixed(0)} ms | | |`);
  } finally {
    daemon.kill("SIGTERM");
    await stopChild(daemon);
    rmSync(base, { recursive: true, force: true });
  }
}

await main();
