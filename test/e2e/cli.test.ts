// The `meshwork` command as a newcomer runs it: help, a bad setting, and a full start and stop.
import test from "ava";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

const bin = join(process.cwd(), "bin/meshwork.js");
// The CLI test always runs the embedded defaults: it tests the command, not the infrastructure.
const env = { ...process.env, DATABASE_URL: "", NATS_URL: "" };

test("--help lists the modes and the settings", (t) => {
  const out = spawnSync(process.execPath, [bin, "--help"], { encoding: "utf8", env });
  t.is(out.status, 0);
  for (const text of ["all", "serve <service>", "gateway", "Fronts:Tracking:Port", "Database:Url"]) t.true(out.stdout.includes(text), text);
});

test("a bad setting stops the process with exit code 2 and names the setting", (t) => {
  const out = spawnSync(process.execPath, [bin, "--Services:Port=abc"], { encoding: "utf8", env });
  t.is(out.status, 2);
  t.regex(out.stderr, /Invalid setting Services:Port/);
  const mode = spawnSync(process.execPath, [bin, "serve", "nosuch"], { encoding: "utf8", env });
  t.is(mode.status, 2);
  t.regex(mode.stderr, /Unknown service 'nosuch'/);
});

test("meshwork starts on the embedded defaults, prints where the front listens, serves, and stops on SIGTERM", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "meshwork-cli-"));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const child = spawn(
    process.execPath,
    [bin, `--Data:Dir=${dataDir}`, "--Services:Port=0", "--Fronts:Tracking:Port=0", "--Telemetry:Exporter=none"],
    { env, stdio: ["ignore", "pipe", "pipe"] },
  );
  t.teardown(() => child.kill("SIGKILL"));
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const lines = createInterface({ input: child.stdout });
  let trackingUrl: string | undefined;
  for await (const line of lines) {
    const entry = JSON.parse(line) as { msg: string; front?: string; url?: string };
    if (entry.front === "tracking" && entry.url) trackingUrl = entry.url;
    if (entry.msg === "meshwork is up") break;
  }
  t.truthy(trackingUrl, `no front URL printed; stderr: ${stderr}`);
  const res = await fetch(`${trackingUrl}/api/assets`);
  t.is(res.status, 200);
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  child.kill("SIGTERM");
  t.is(await exited, 0);
});
