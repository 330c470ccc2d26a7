// The README's first command as a newcomer runs it: `meshwork` started from a fresh working
// directory with no DATABASE_URL, no NATS_URL and the default, relative data directory. Every front
// answers, data written before a SIGTERM is there after the next start, and the data lives where
// the README says (`.data/pg` under the working directory).
import test from "ava";
import { type ChildProcessByStdio, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";

const bin = join(process.cwd(), "bin/meshwork.js");

interface Started {
  child: ChildProcessByStdio<null, Readable, Readable>;
  fronts: Map<string, string>;
  stderr: () => string;
}

/** Starts meshwork in `cwd` and resolves once it says it is up, with the URL of every front. */
async function start(cwd: string): Promise<Started> {
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (/^(DATABASE_URL|NATS_URL|Data__|Database__|Nats__)/i.test(name)) delete env[name];
  // Free ports so the test never collides with a mesh already on 8080; telemetry off so stdout is only log lines.
  const flags = [
    "--Services:Port=0",
    "--Fronts:Tracking:Port=0",
    "--Fronts:Protection:Port=0",
    "--Gateway:Server:Port=0",
    "--Telemetry:Exporter=none",
  ];
  const child = spawn(process.execPath, [bin, ...flags], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const fronts = new Map<string, string>();
  const exited = new Promise<never>((_, reject) =>
    child.once("exit", (code) => reject(new Error(`meshwork exited with ${code}: ${stderr}`))),
  );
  const up = (async () => {
    for await (const line of createInterface({ input: child.stdout })) {
      const entry = JSON.parse(line) as { msg: string; front?: string; url?: string };
      if (entry.front && entry.url) fronts.set(entry.front, entry.url);
      if (entry.msg === "meshwork is up") return;
    }
  })();
  await Promise.race([up, exited]);
  return { child, fronts, stderr: () => stderr };
}

function stop({ child }: Started): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  child.kill("SIGTERM");
  return exited;
}

test("a fresh working directory: every front answers, SIGTERM exits 0, data survives a restart", async (t) => {
  const cwd = mkdtempSync(join(tmpdir(), "meshwork-first-start-"));
  t.teardown(() => rmSync(cwd, { recursive: true, force: true }));

  const first = await start(cwd);
  t.teardown(() => first.child.kill("SIGKILL"));
  t.deepEqual([...first.fronts.keys()].sort(), ["agents", "protection", "tracking"]);
  const health = await fetch(`${first.fronts.get("tracking")}/api/health`);
  t.is(health.status, 200, await health.clone().text());
  for (const [name, url] of first.fronts) {
    if (name === "tracking") continue;
    const res = await fetch(`${url}/`);
    t.is(res.status, 404, `${name} answers in its own style while it has no operation at /`);
    t.regex(res.headers.get("content-type") ?? "", /json/);
  }
  const created = await fetch(`${first.fronts.get("tracking")}/api/assets`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "first start" }),
  });
  t.is(created.status, 200);
  const { id } = (await created.json()) as { id: string };
  t.is(await stop(first), 0, first.stderr());
  t.true(existsSync(join(cwd, ".data", "pg")), "the embedded PostgreSQL keeps its data in .data/pg under the working directory");

  const second = await start(cwd);
  t.teardown(() => second.child.kill("SIGKILL"));
  const read = await fetch(`${second.fronts.get("tracking")}/api/assets/${id}`);
  t.is(read.status, 200);
  t.like(await read.json(), { id, name: "first start" });
  t.is(await stop(second), 0, second.stderr());
});
