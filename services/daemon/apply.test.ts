// `app-daemon update` end to end under the process manager: a real daemon (this version, 0.1.0)
// checks a loopback npm registry every second and records `gateway.update.available` once (seen on
// /hubs/events); `update` drains it (readiness 503, a new turn 503 with Retry-After, observed while
// the registry holds the tarball), a corrupt tarball fails the install step and resumes the daemon
// (exit 1 naming the step), and a good one is installed by real `npm install --prefix`, reconciled
// by the new version's own `install` and restarted through the manager: status then shows 0.2.0.
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { until } from "../../test/support/until.js";
import { daemonContext, daemonStatus, runDaemonCommand } from "./cli.js";
import { fakeRegistry, packNextRelease } from "./fake-npm-registry.js";

const TOKEN = "feed-token-apply-secret-3";

/** A whole mesh of its own, as daemon.test.ts runs it. */
function meshFlags(base: string, dataDir: string): string[] {
  return [
    `--Data:Dir=${join(base, "data")}`,
    `--AgentGateway:DataDir=${dataDir}`,
    "--Services:Port=0",
    "--Fronts:Tracking:Port=0",
    "--Fronts:Protection:Port=0",
    "--Gateway:Server:Port=0",
    "--Telemetry:Exporter=none",
    "--Gateway:Telemetry:Enabled=false",
    "--Protection:TorExits:SourceUrl=http://127.0.0.1:9/none",
  ];
}

async function command(args: string[]): Promise<{ code: number; out: string }> {
  let out = "";
  const code = await runDaemonCommand(args, (text) => {
    out += text;
  });
  return { code, out };
}

/**
 * A chat-completions provider on loopback (OpenAI's wire protocol) that holds each completion until
 * `release()`: a turn stays in flight exactly as long as the test wants.
 */
async function heldProvider(t: import("ava").ExecutionContext) {
  const held: (() => void)[] = [];
  const server = createServer((req, res) => {
    if (req.method === "GET" && req.url === "/v1/models") {
      return void res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ object: "list", data: [{ id: "m1", object: "model" }] }));
    }
    let text = "";
    req.on("data", (chunk: Buffer) => {
      text += chunk.toString();
    });
    req.on("end", () => {
      held.push(() => {
        const stream = (JSON.parse(text) as { stream?: boolean }).stream === true;
        const base = { id: "c1", created: 1, model: "m1" };
        if (!stream) {
          res.writeHead(200, { "content-type": "application/json" }).end(
            JSON.stringify({
              ...base,
              object: "chat.completion",
              choices: [{ index: 0, message: { role: "assistant", content: "finished in flight" }, finish_reason: "stop" }],
              usage: { prompt_tokens: 1, completion_tokens: 3, total_tokens: 4 },
            }),
          );
          return;
        }
        res.writeHead(200, { "content-type": "text/event-stream" });
        const chunk = (delta: unknown, finish: string | null) =>
          res.write(
            `data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
          );
        chunk({ role: "assistant", content: "" }, null);
        chunk({ content: "finished in flight" }, null);
        chunk({}, "stop");
        res.end("data: [DONE]\n\n");
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    get waiting() {
      return held.length;
    },
    release: () => {
      for (const answer of held.splice(0)) answer();
    },
  };
}

/** Reads a text/event-stream into `text` until aborted. */
function readStream(url: string, signal: AbortSignal): { text: () => string; opened: Promise<number> } {
  let text = "";
  const opened = fetch(url, { headers: { accept: "text/event-stream" }, signal }).then((res) => {
    void (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) text += decoder.decode(chunk, { stream: true });
      } catch {
        // Aborted at the end of the test.
      }
    })();
    return res.status;
  });
  return { text: () => text, opened };
}

test("update: announce once, drain (503s), a failed install resumes the daemon, then install, reconcile and restart the new version", async (t) => {
  t.timeout(600_000);
  const base = await mkdtemp(join(tmpdir(), "app-daemon-update-"));
  const dataDir = join(base, "app");
  const prefix = join(base, "prefix");
  // npm's cache of its own, so the test never reads or fills the user's.
  process.env.npm_config_cache = join(base, "npm-cache");
  const pkg = await packNextRelease(join(base, "pack"), "app-daemon", "0.2.0");
  const registry = await fakeRegistry(t, pkg, TOKEN);
  const provider = await heldProvider(t);
  const flags = [
    ...meshFlags(base, dataDir),
    `--Providers:held:BaseUrl=${provider.url}`,
    "--Providers:held:ApiKey=sk-held-provider",
    "--Providers:held:Models=m1",
    "--Daemon:ServiceManager=process",
    "--Updates:PackageId=app-daemon",
    `--Updates:PackageFeedUrl=${registry.url}`,
    `--Updates:FeedToken=${TOKEN}`,
    "--Updates:CheckInterval=00:00:01",
    "--Updates:DrainTimeout=00:00:05",
    `--Updates:InstallPrefix=${prefix}`,
  ];
  t.teardown(async () => {
    registry.release();
    provider.release();
    await command(["stop", ...flags]).catch(() => undefined);
  });
  t.is((await command(["install", ...flags])).code, 0);
  t.is((await command(["start", ...flags])).code, 0);
  const context = daemonContext(flags);
  const running = await daemonStatus(context);
  t.like(running, { state: "running", version: "0.1.0" });
  const agents = running.fronts?.find((f) => f.name === "agents")?.url;
  t.truthy(agents, "the status names the agent front");

  // The periodic check: nothing to announce while the feed has only 0.1.0; then 0.2.0, once.
  const abort = new AbortController();
  t.teardown(() => abort.abort());
  const events = readStream(new URL("/hubs/events", agents).href, abort.signal);
  t.is(await events.opened, 200);
  const metadataReads = () => registry.seen.filter((r) => r.url === "/app-daemon").length;
  await until(() => metadataReads() >= 2, "two checks of the feed");
  registry.versions.push("0.2.0");
  const announced = await until(
    () => /event: gateway\.update\.available\n(?:.*\n)*?data: (.*)\n/.exec(events.text()),
    "the update event on /hubs/events",
    {
      timeoutMs: 120_000,
    },
  );
  t.regex(announced[1]!, /"currentVersion":"0\.1\.0"/);
  t.regex(announced[1]!, /"latestVersion":"0\.2\.0"/);
  t.regex(announced[1]!, /"packageId":"app-daemon"/);
  await until(() => existsSync(join(dataDir, "update-state.json")), "update-state.json");
  t.like(JSON.parse(readFileSync(join(dataDir, "update-state.json"), "utf8")), { announcedVersion: "0.2.0" });
  const readsAfter = metadataReads();
  await until(() => metadataReads() >= readsAfter + 2, "two more checks");
  t.is(events.text().match(/event: gateway\.update\.available/g)?.length, 1, "announced once");
  t.true(
    registry.seen.every((r) => r.headers.authorization === `Bearer ${TOKEN}`),
    "the feed token on every request",
  );
  t.is((await fetch(new URL("/health/ready", agents))).status, 200);

  // A turn in flight when the update starts: the drain waits for it (npm is not run meanwhile).
  const spawned = await fetch(new URL("/api/agents", agents), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ provider: "held", model: "m1" }),
  });
  t.is(spawned.status, 201);
  const agentId = ((await spawned.json()) as { id: string }).id;
  const inFlight = fetch(new URL(`/api/agents/${agentId}/message`, agents), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message: "take your time" }),
  });
  await until(() => provider.waiting > 0, "the turn at the provider");

  // A corrupt tarball: the drain is visible while the registry holds it, the install fails, the daemon resumes.
  registry.corrupt = true;
  registry.hold = true;
  let settled: Error | string | undefined;
  const failed = command(["update", ...flags]).then(
    (result) => {
      settled = `exit ${result.code}: ${result.out}`;
      return undefined;
    },
    (error: Error) => {
      settled = error;
      return error;
    },
  );
  await until(async () => (await daemonStatus(context)).draining === true, "draining");
  const npmAsked = () => registry.seen.some((r) => String(r.headers["user-agent"]).startsWith("npm/"));
  const checksBefore = metadataReads();
  await until(() => metadataReads() >= checksBefore + 2, "two more periodic checks while the turn runs");
  t.false(npmAsked(), "npm is not run while a turn is in flight");
  t.is(settled, undefined);
  provider.release();
  const finished = await inFlight;
  t.is(finished.status, 200, "the turn in flight finished");
  t.like(await finished.json(), { response: "finished in flight" });
  await until(() => registry.waiting > 0 || settled, "npm asking for the tarball", { timeoutMs: 120_000 });
  t.is(settled, undefined, "the update waits for the tarball");
  t.true(npmAsked());
  t.like(await daemonStatus(context), { state: "running", draining: true });
  t.is((await fetch(new URL("/health/ready", agents))).status, 503, "not ready while draining");
  const turn = await fetch(new URL("/api/agents/0c7d2a8e-59a4-4c1e-9b67-4b1f1d3e2a10/message", agents), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message: "hello" }),
  });
  t.is(turn.status, 503, "a new turn is refused while draining");
  // The front never passes a 5xx's own message on (services/gateway: written for operators).
  t.like(await turn.json(), { error: "Service Unavailable", message: "The service is unavailable; try again later." });
  t.is(turn.headers.get("retry-after"), "20", "DrainTimeout (5 s) + 15 s");
  registry.release();
  const error = await failed;
  t.regex(error?.message ?? "", /^update to 0\.2\.0 failed at install: .*; the running daemon was resumed$/);
  t.false((error?.message ?? "").includes("\n"), "one line");
  t.false((error?.message ?? "").includes(TOKEN));
  t.like(await daemonStatus(context), { state: "running", version: "0.1.0", draining: false });
  t.is((await fetch(new URL("/health/ready", agents))).status, 200, "ready again");

  // The good tarball: installed, reconciled by the new version, restarted through the manager.
  registry.corrupt = false;
  registry.hold = true;
  const applying = command(["update", ...flags]);
  await until(() => registry.waiting > 0, "npm asking for the tarball again", { timeoutMs: 120_000 });
  registry.release();
  const applied = await applying;
  t.deepEqual(applied, { code: 0, out: "0.1.0 → 0.2.0\n" });
  t.like(JSON.parse(readFileSync(join(prefix, "lib/node_modules/app-daemon/package.json"), "utf8")), { version: "0.2.0" });
  const reconciled = JSON.parse(readFileSync(join(dataDir, "reconciled.json"), "utf8")) as { version: string; args: string[] };
  t.is(reconciled.version, "0.2.0", "the new version's own install rewrote the definition");
  t.true(reconciled.args.includes(`--AgentGateway:DataDir=${dataDir}`));
  const definition = JSON.parse(readFileSync(join(dataDir, "daemon/service.json"), "utf8")) as { script: string };
  t.true(definition.script.startsWith(join(prefix, "lib/node_modules/app-daemon")));
  t.like(await daemonStatus(context), { state: "running", version: "0.2.0" });
  t.true(
    registry.seen.every((r) => r.headers.authorization === `Bearer ${TOKEN}`),
    "npm sent the feed token too (from the temporary user config)",
  );
});

test("update when the feed has nothing newer: exit 0, nothing installed, nothing drained", async (t) => {
  const base = await mkdtemp(join(tmpdir(), "app-daemon-update-"));
  const pkg = await packNextRelease(join(base, "pack"), "app-daemon", "0.2.0");
  const registry = await fakeRegistry(t, pkg, TOKEN);
  const flags = [
    `--AgentGateway:DataDir=${join(base, "app")}`,
    "--Daemon:ServiceManager=process",
    `--Updates:PackageFeedUrl=${registry.url}`,
    `--Updates:FeedToken=${TOKEN}`,
    `--Updates:InstallPrefix=${join(base, "prefix")}`,
  ];
  t.deepEqual(await command(["update", ...flags]), { code: 0, out: "app-daemon 0.1.0 is up to date\n" });
  t.deepEqual(
    registry.seen.map((r) => r.url),
    ["/app-daemon"],
  );
  t.false(existsSync(join(base, "prefix")));
});
