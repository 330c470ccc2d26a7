// `npm run bench:tools`: the agent gateway's tool dispatcher, in this process, against direct calls
// measured in the same run, interleaved call by call so both see the same machine:
//   think     dispatch of `think` through the real Dispatcher (toolsParts.start: the database policy
//             store, the buffered audit sink on the audit ring, app.tools.invocations on a real
//             MeterProvider) against the think tool's own `run`. Twice: as an rpc call without an
//             agent (the policy is the settings' lists, no database read) and as an agent's call
//             with a session (the agent's policy and the session's state read from the database,
//             as every call of a turn does), the latter also with its audit entry handed to the
//             caller as a turn does (written with the turn, not through the buffer). Target p50 < 0.2 ms.
//   read      read_file of a 1 MiB text file through the dispatcher against fs.readFile. Target
//             < 20 ms, judged at p50 as the think target is (p99 printed beside it).
//   grep      grep over 10,000 small files (100 directories of 100) through the dispatcher against a
//             plain recursive readdir + readFile + line regex in the same process. Target < 1 s (p50).
// Then nothing is lost at shutdown: a burst of dispatches is made and the audit buffer closed at
// once, as the module's worker does at shutdown; the `tool.invoke` rows must equal every dispatch
// of the run (exit code 1 otherwise). The counter's sum is checked the same way.
// The database is the embedded PGlite (in this process, one connection, as `meshwork` runs without
// DATABASE_URL); BENCH_DATABASE_URL runs on a throwaway database of a real PostgreSQL instead.
// The audit ring's capacity is raised above the run's dispatches so every row stays countable.
// `--quick` is a smoke run (fewer rounds), not figures; `--only=think,read,grep` picks cases.
// A benchmark, not a test.
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { readdirSync, readFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, relative } from "node:path";
import { performance } from "node:perf_hooks";
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { pino } from "pino";
import { turnInstruments } from "../services/agents/agents/turn-telemetry.js";
import { createAuditRing } from "../services/agents/audit/audit-ring.js";
import { auditParts } from "../services/agents/audit/module-parts.js";
import type { ProviderPool } from "../services/agents/providers/index.js";
import { think } from "../services/agents/tools/core/think.js";
import { toolsParts } from "../services/agents/tools/module-parts.js";
import { defaultToolsSettings } from "../services/agents/tools/settings.js";
import { testToolContext } from "../services/agents/tools/testing.js";
import type { InvokeRequest } from "../services/agents/tools/tool.js";
import { openDatabase } from "../services/runtime/database/index.js";
import { createUnitOfWork } from "../services/runtime/outbox/index.js";
import { createTestDatabaseUrl, type TestDatabase } from "../test/support/test-database.js";
import { backgroundLoad } from "./cpu.js";
import { percentile } from "./load.js";

const quick = process.argv.includes("--quick");
const cases = ["think", "read", "grep"] as const;
type Case = (typeof cases)[number];
const only = process.argv
  .find((arg) => arg.startsWith("--only="))
  ?.slice("--only=".length)
  .split(",");
if (only?.some((c) => !cases.includes(c as Case))) throw new Error(`--only takes ${cases.join(",")}`);
const runs = (c: Case) => !only || only.includes(c);

const TARGET = { thinkP50Ms: 0.2, readMs: 20, grepMs: 1_000 } as const;
const ROUNDS = {
  think: quick ? { warmup: 500, measured: 2_000 } : { warmup: 2_000, measured: 10_000 },
  read: quick ? { warmup: 5, measured: 30 } : { warmup: 20, measured: 200 },
  grep: quick ? { warmup: 1, measured: 5 } : { warmup: 3, measured: 30 },
};
const FILE_BYTES = 1024 * 1024;
const GREP_DIRS = 100;
const GREP_FILES_PER_DIR = 100;
/** Files holding the needle: few, so grep reads every file without reaching maxResults (50). */
const NEEDLE_EVERY = 500;
const SHUTDOWN_BURST = quick ? 1_000 : 5_000;
const AGENT_ID = "0b6f3c1e-6a55-4d2b-9d8e-2f4a1c7b9e01";
const SESSION_ID = "bench-session";

interface Figures {
  samples: number;
  p50: number;
  p99: number;
}

function figures(samples: number[]): Figures {
  const sorted = Float64Array.from(samples).sort();
  return { samples: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

/** Runs the calls of a round one after the other, in an order rotating each round, timing each. */
async function interleaved(names: string[], calls: (() => Promise<unknown>)[], rounds: { warmup: number; measured: number }) {
  const samples = names.map(() => [] as number[]);
  for (let round = 0; round < rounds.warmup + rounds.measured; round++) {
    for (let k = 0; k < calls.length; k++) {
      const i = (round + k) % calls.length;
      const started = performance.now();
      await calls[i]!();
      const took = performance.now() - started;
      if (round >= rounds.warmup) samples[i]!.push(took);
    }
  }
  return Object.fromEntries(names.map((name, i) => [name, figures(samples[i]!)]));
}

const ms = (value: number) => (value < 1 ? value.toFixed(3) : value < 100 ? value.toFixed(2) : value.toFixed(0));

async function writeWorkspace(root: string): Promise<{ bigFile: string; files: number; needles: number }> {
  // A 1 MiB text file of 100-byte lines.
  const line = `${"the quick brown fox jumps over the lazy dog ".repeat(3).slice(0, 99)}\n`;
  await writeFile(join(root, "big.txt"), line.repeat(Math.ceil(FILE_BYTES / line.length)).slice(0, FILE_BYTES));
  // 10,000 small files of 30 lines, a needle line in every NEEDLE_EVERY-th.
  let needles = 0;
  for (let d = 0; d < GREP_DIRS; d++) {
    const dir = join(root, "tree", `dir${String(d).padStart(3, "0")}`);
    await mkdir(dir, { recursive: true });
    await Promise.all(
      Array.from({ length: GREP_FILES_PER_DIR }, (_, f) => {
        const n = d * GREP_FILES_PER_DIR + f;
        const lines = Array.from({ length: 30 }, (_, l) => `export const value${l} = ${n * 31 + l}; // filler text of a source line`);
        if (n % NEEDLE_EVERY === 0) {
          lines[17] = `const needle_${n} = "found";`;
          needles++;
        }
        return writeFile(join(dir, `file${String(f).padStart(3, "0")}.ts`), `${lines.join("\n")}\n`);
      }),
    );
  }
  return { bigFile: "big.txt", files: GREP_DIRS * GREP_FILES_PER_DIR, needles };
}

/** The grep baseline: a sorted recursive walk, each file read and matched line by line, `path:line:text` out. */
function plainGrep(root: string, regex: RegExp, maxResults: number): string[] {
  const out: string[] = [];
  const visit = (dir: string): boolean => {
    const entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!visit(path)) return false;
        continue;
      }
      const lines = readFileSync(path, "utf8").split("\n");
      for (let n = 0; n < lines.length; n++) {
        if (!regex.test(lines[n]!)) continue;
        if (out.length === maxResults) return false;
        out.push(`${relative(root, path)}:${n + 1}:${lines[n]}`);
      }
    }
    return true;
  };
  visit(root);
  return out;
}

async function main(): Promise<void> {
  const background = await backgroundLoad(1_000);
  const load = loadavg();
  const base = await mkdtemp(join(tmpdir(), "bench-tools-"));
  const workspaceRoot = join(base, "workspace");
  await mkdir(workspaceRoot, { recursive: true });
  let database: TestDatabase | undefined;
  const logger = pino({ level: process.env.BENCH_LOG || "silent" });
  try {
    process.stdout.write("writing the workspace (a 1 MiB file, 10,000 small files) ... ");
    const workspace = await writeWorkspace(workspaceRoot);
    console.log("done");

    if (process.env.BENCH_DATABASE_URL) database = await createTestDatabaseUrl(process.env.BENCH_DATABASE_URL);
    const db = await openDatabase({
      url: database?.url,
      dataDir: join(base, "data"),
      modules: [
        {
          name: "agents",
          entities: [...auditParts.entities, ...toolsParts.entities],
          migrations: [...auditParts.migrations, ...toolsParts.migrations],
        },
      ],
      logger,
    });
    const uow = createUnitOfWork({ db, outbox: { notify() {} } });
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
    const meterProvider = new MeterProvider({ readers: [reader] });
    const instruments = turnInstruments({ meterProvider });
    const tools = await toolsParts.start({
      db,
      uow,
      logger,
      settings: { ...defaultToolsSettings(), workspaceRoot },
      dataDir: join(base, "data"),
      audit: createAuditRing({ capacity: 10_000_000 }),
      instruments,
      // Not on any measured path (chat, image questions and subagents only).
      pool: {} as ProviderPool,
    });
    const { dispatcher } = tools;
    // A stored policy and session, so the agent's call finds rows as a configured agent does.
    await dispatcher.policies.setAgent(AGENT_ID, { approvalMode: "prompt", allow: ["git_*"], deny: ["shell_*"] });
    await dispatcher.policies.setSession(SESSION_ID, { autorun: false });

    // Dispatches whose audit entry goes to the buffer (a turn's go to the turn, written with it).
    let dispatched = 0;
    let invoked = 0;
    const invoke = async (request: InvokeRequest) => {
      invoked++;
      if (!request.audit) dispatched++;
      const result = await dispatcher.invoke(request);
      if (result.isError) throw new Error(`${request.name} failed: ${result.output.slice(0, 200)}`);
      return result;
    };
    const thinkCtx = await testToolContext();
    const report: { name: string; figure: string; target?: string; met?: boolean }[] = [];

    if (runs("think")) {
      const args = { thought: "The file list is short; read each file once." };
      const turnEntries: unknown[] = [];
      const agentCall = {
        name: "think",
        arguments: JSON.stringify(args),
        source: "agent",
        agentId: AGENT_ID,
        sessionId: SESSION_ID,
      } as const;
      const r = await interleaved(
        ["direct", "rpc", "agent", "turn"],
        [
          () => think.run(args, thinkCtx),
          () => invoke({ name: "think", arguments: args, source: "rpc" }),
          () => invoke(agentCall),
          () => invoke({ ...agentCall, audit: (entry) => turnEntries.push(entry) }),
        ],
        ROUNDS.think,
      );
      const direct = r.direct!;
      report.push({ name: "think: its `run`, direct (baseline)", figure: `p50 ${ms(direct.p50)} ms, p99 ${ms(direct.p99)}` });
      for (const [key, label] of [
        ["rpc", "think through the dispatcher, rpc, no agent (no database read)"],
        ["agent", "think through the dispatcher, an agent's call with a session (policy and session read)"],
        ["turn", "the same call as a turn makes it (audit entry kept by the turn, not buffered)"],
      ] as const) {
        const f = r[key]!;
        report.push({
          name: label,
          figure: `p50 ${ms(f.p50)} ms, p99 ${ms(f.p99)}; overhead p50 ${ms(f.p50 - direct.p50)} ms`,
          target: `p50 < ${TARGET.thinkP50Ms} ms`,
          met: f.p50 < TARGET.thinkP50Ms,
        });
      }
    }

    if (runs("read")) {
      const absolute = join(workspaceRoot, workspace.bigFile);
      let answered = 0;
      const r = await interleaved(
        ["direct", "dispatch"],
        [
          () => readFile(absolute, "utf8"),
          async () => {
            answered = (await invoke({ name: "read_file", arguments: { path: workspace.bigFile }, source: "rpc" })).output.length;
          },
        ],
        ROUNDS.read,
      );
      report.push({ name: "fs.readFile of 1 MiB, utf8 (baseline)", figure: `p50 ${ms(r.direct!.p50)} ms, p99 ${ms(r.direct!.p99)}` });
      report.push({
        name: `read_file of 1 MiB through the dispatcher (lines numbered, answer cut at Tools:MaxOutputChars: ${answered.toLocaleString("en")} chars)`,
        figure: `p50 ${ms(r.dispatch!.p50)} ms, p99 ${ms(r.dispatch!.p99)}; overhead p50 ${ms(r.dispatch!.p50 - r.direct!.p50)} ms`,
        target: `p50 < ${TARGET.readMs} ms`,
        met: r.dispatch!.p50 < TARGET.readMs,
      });
    }

    if (runs("grep")) {
      const pattern = "needle_\\d+";
      const tree = join(workspaceRoot, "tree");
      let found = { plain: 0, tool: 0 };
      const r = await interleaved(
        ["direct", "dispatch"],
        [
          async () => {
            found.plain = plainGrep(tree, new RegExp(pattern), 50).length;
          },
          async () => {
            const out = (await invoke({ name: "grep", arguments: { pattern, path: "tree" }, source: "rpc" })).output;
            found = { ...found, tool: out.split("\n").length };
          },
        ],
        ROUNDS.grep,
      );
      if (found.plain !== workspace.needles || found.tool !== workspace.needles)
        throw new Error(`grep found ${found.tool} and the baseline ${found.plain} lines, expected ${workspace.needles}`);
      report.push({
        name: `plain recursive read + regex over ${workspace.files.toLocaleString("en")} files (baseline)`,
        figure: `p50 ${ms(r.direct!.p50)} ms, p99 ${ms(r.direct!.p99)}`,
      });
      report.push({
        name: `grep over ${workspace.files.toLocaleString("en")} files through the dispatcher (${workspace.needles} matching lines)`,
        figure: `p50 ${ms(r.dispatch!.p50)} ms, p99 ${ms(r.dispatch!.p99)}; overhead p50 ${ms(r.dispatch!.p50 - r.direct!.p50)} ms`,
        target: `p50 < ${TARGET.grepMs} ms`,
        met: r.dispatch!.p50 < TARGET.grepMs,
      });
    }

    // Nothing lost at shutdown: a burst whose entries are still queued when the buffer closes.
    const burst = Array.from({ length: SHUTDOWN_BURST }, (_, i) =>
      invoke({ name: "think", arguments: { thought: `t${i}` }, source: "rpc" }),
    );
    await Promise.all(burst);
    const closing = performance.now();
    for (const worker of tools.workers) await worker.stop?.();
    const closeMs = performance.now() - closing;
    const [{ count }] = (await db
      .em()
      .execute(`select count(*)::int as "count" from "agents_audit_event" where "action" = 'tool.invoke'`)) as [{ count: number }];
    await reader.forceFlush();
    const counted = exporter
      .getMetrics()
      .flatMap((m) => m.scopeMetrics)
      .flatMap((s) => s.metrics)
      .filter((m) => m.descriptor.name === "app.tools.invocations")
      .flatMap((m) => m.dataPoints as { value: unknown }[])
      .reduce((sum, point) => sum + Number(point.value), 0);
    await meterProvider.shutdown();
    await db.close();

    const cpu = cpus();
    console.log(
      `\n${cpu.length} × ${cpu[0]?.model.trim()}, Node ${process.version}, database ${database ? "PostgreSQL (BENCH_DATABASE_URL)" : "embedded PGlite"}` +
        `${quick ? " (--quick: short runs, not figures)" : ""}; load average ${load.map((l) => l.toFixed(2)).join(" ")}; ` +
        `background load before the run ${(background * 100).toFixed(0)} % (${background < 0.1 ? "quiet" : "busy"})\n`,
    );
    console.log("| Measure | Figure | Target | |\n|---|---|---|---|");
    for (const row of report)
      console.log(`| ${row.name} | ${row.figure} | ${row.target ?? ""} | ${row.met === undefined ? "" : row.met ? "met" : "not met"} |`);
    const lost = dispatched - count;
    console.log(
      `\naudit at shutdown: ${dispatched.toLocaleString("en")} dispatches audited through the buffer, ${count.toLocaleString("en")} tool.invoke rows after the buffer closed ` +
        `(the last ${SHUTDOWN_BURST.toLocaleString("en")} made right before; close took ${ms(closeMs)} ms): ${lost === 0 ? "nothing lost" : `${lost} LOST`}`,
    );
    console.log(
      `app.tools.invocations: ${counted.toLocaleString("en")} of ${invoked.toLocaleString("en")} dispatches (the turn-style ones included) ` +
        `${counted === invoked ? "(every one counted)" : "(MISMATCH)"}`,
    );
    if (lost !== 0 || counted !== invoked) process.exitCode = 1;
  } finally {
    await database?.drop();
    await rm(base, { recursive: true, force: true });
  }
}

await main();
