// `npm run bench:channels`: what a chat channel adds to a turn. A loopback Telegram Bot API
// (test/support/fake-telegram.ts) and a zero-latency OpenAI-compatible provider
// (test/support/fake-openai.ts) run in this process; the mesh runs as `meshwork` in a child process
// (embedded database, or BENCH_DATABASE_URL's PostgreSQL; NATS_URL's NATS when set) with the
// Telegram channel connected at start (`Channels:Telegram:AutoConnect`).
//   channel   a message pushed to the fake Telegram (answering the adapter's held getUpdates) until
//             the reply's sendMessage reaches the fake: long poll answered, conversation routed,
//             turn run (history read, provider called, turn stored), reply sent.
//   provider  the same chat-completions request the turn sends, straight to the fake from here.
// Messages go one at a time, interleaved with the direct calls, over 10 conversations (each
// spawned by its first message, outside the measured part). Overhead = channel p50 − provider p50;
// target under 5 ms at p50 (p99 printed). `--quick` is a smoke run, not figures. A benchmark, not a test.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { startFakeOpenAi } from "../test/support/fake-openai.js";
import { startFakeTelegram } from "../test/support/fake-telegram.js";
import { createTestDatabaseUrl, type TestDatabase } from "../test/support/test-database.js";
import { stopChild } from "./children.js";
import { backgroundLoad } from "./cpu.js";
import { percentile } from "./load.js";

const quick = process.argv.includes("--quick");
const CONVERSATIONS = 10;
const ROUNDS = quick ? { warmup: 20, measured: 100 } : { warmup: 200, measured: 2_000 };
const TARGET_OVERHEAD_P50_MS = 5;
const MODEL = "gpt-4o-mini";

const ms = (value: number) => value.toFixed(2);

async function main(): Promise<void> {
  const background = await backgroundLoad(1_000);
  const load = loadavg();
  const telegram = await startFakeTelegram();
  const provider = await startFakeOpenAi({ models: [MODEL] });
  provider.fallback = { kind: "reply", content: ["Noted."], usage: { prompt_tokens: 12, completion_tokens: 2 } };
  // The fakes record every request; a benchmark's worth would only grow the heap.
  const trim = setInterval(() => provider.requests.splice(0, provider.requests.length), 1_000);

  // Each sendMessage that reaches the fake Telegram wakes the message waiting for it.
  let replied: (() => void) | undefined;
  telegram.onSent = () => {
    telegram.sent.length = 0;
    replied?.();
  };

  const dataDir = mkdtempSync(join(tmpdir(), "meshwork-bench-channels-"));
  const database: TestDatabase | undefined = process.env.BENCH_DATABASE_URL
    ? await createTestDatabaseUrl(process.env.BENCH_DATABASE_URL)
    : undefined;
  const bin = fileURLToPath(new URL("../bin/meshwork.js", import.meta.url));
  const mesh = spawn(
    process.execPath,
    [
      bin,
      `--Data:Dir=${dataDir}`,
      `--AgentGateway:DataDir=${dataDir}`,
      ...(database ? [`--Database:Url=${database.url}`] : []),
      ...(process.env.NATS_URL ? [`--Nats:Url=${process.env.NATS_URL}`] : []),
      "--Services:Port=0",
      "--Fronts:Tracking:Port=0",
      "--Fronts:Protection:Port=0",
      "--Gateway:Server:Port=0",
      "--Telemetry:Exporter=none",
      "--Gateway:Telemetry:Enabled=false",
      "--Logging:Level=warn",
      "--Protection:TorExits:SourceUrl=http://127.0.0.1:9/none",
      `--Providers:fake:BaseUrl=${provider.url}`,
      `--Providers:fake:ApiKey=${provider.apiKey}`,
      `--Providers:fake:Models:0=${MODEL}`,
      `--Channels:Telegram:BotToken=${telegram.token}`,
      `--Channels:Telegram:ApiBaseUrl=${telegram.url}`,
      "--Channels:Telegram:AutoConnect=true",
      "--Channels:Telegram:Provider=fake",
      `--Channels:Telegram:Model=${MODEL}`,
    ],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  try {
    // Connected: the adapter holds its long poll.
    const deadline = Date.now() + 120_000;
    while (telegram.pollsStarted === 0) {
      if (mesh.exitCode !== null) throw new Error(`meshwork exited (${mesh.exitCode}) before the Telegram channel connected`);
      if (Date.now() > deadline) throw new Error("the Telegram channel did not connect within 120 s");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const message = async (chatId: number, text: string): Promise<number> => {
      const answered = new Promise<void>((resolve) => {
        replied = resolve;
      });
      const started = performance.now();
      telegram.push({ chatId, fromId: chatId, text });
      await answered;
      return performance.now() - started;
    };
    const direct = async (): Promise<number> => {
      const started = performance.now();
      const res = await fetch(`${provider.url}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${provider.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: MODEL, stream: true, messages: [{ role: "user", content: "hello" }] }),
      });
      await res.text();
      return performance.now() - started;
    };

    // Every conversation's first message spawns its agent: not measured.
    for (let c = 0; c < CONVERSATIONS; c++) await message(1000 + c, "hello");
    const channel: number[] = [];
    const straight: number[] = [];
    for (let round = 0; round < ROUNDS.warmup + ROUNDS.measured; round++) {
      const chatId = 1000 + (round % CONVERSATIONS);
      // The order alternates, so neither side always runs right after the other.
      const viaChannelFirst = round % 2 === 0;
      const first = viaChannelFirst ? await message(chatId, `message ${round}`) : await direct();
      const second = viaChannelFirst ? await direct() : await message(chatId, `message ${round}`);
      if (round < ROUNDS.warmup) continue;
      channel.push(viaChannelFirst ? first : second);
      straight.push(viaChannelFirst ? second : first);
    }
    const sort = (samples: number[]) => Float64Array.from(samples).sort();
    const c = sort(channel);
    const p = sort(straight);
    const overhead = percentile(c, 50) - percentile(p, 50);

    const cpu = cpus();
    console.log(
      `\n${cpu.length} × ${cpu[0]?.model.trim()}, Node ${process.version}, database ${database ? "PostgreSQL (BENCH_DATABASE_URL)" : "embedded PGlite"}, ` +
        `bus ${process.env.NATS_URL ? "NATS" : "in-process"}${quick ? " (--quick: short runs, not figures)" : ""}; load average ${load.map((l) => l.toFixed(2)).join(" ")}; ` +
        `background load before the run ${(background * 100).toFixed(0)} % (${background < 0.1 ? "quiet" : "busy"})\n`,
    );
    console.log("| Measure | p50 | p99 | Target | |\n|---|---|---|---|---|");
    console.log(
      `| Telegram message in → reply out (${c.length.toLocaleString("en")} messages) | ${ms(percentile(c, 50))} ms | ${ms(percentile(c, 99))} ms | | |`,
    );
    console.log(`| the provider's chat request alone | ${ms(percentile(p, 50))} ms | ${ms(percentile(p, 99))} ms | | |`);
    console.log(
      `| overhead beyond the provider | ${ms(overhead)} ms | | < ${TARGET_OVERHEAD_P50_MS} ms at p50 | ${overhead < TARGET_OVERHEAD_P50_MS ? "met" : "not met"} |`,
    );
  } finally {
    replied = undefined;
    clearInterval(trim);
    mesh.kill("SIGTERM");
    await stopChild(mesh);
    await telegram.close();
    await provider.close();
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
