// The distributed mode as processes: two `meshwork serve tracking` and two `meshwork gateway`
// (the real CLI, each its own process) on one NATS and one fresh PostgreSQL database, both gateways
// given both tracking addresses (Services:Tracking:Address=a,b). A write through one gateway is
// read through the other, a live event stream on one gateway carries what a write through the
// other caused, a geofence defined through one fires for positions sent through the other (to
// both tracking instances), and with one tracking process killed no request fails: the refused
// address is skipped and the call goes to the live one. Real servers only (the embedded
// PostgreSQL and bus belong to one process), but for the check of a bad address list.
import test from "ava";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { EventSource } from "eventsource";
import { realServers } from "../support/real-infra.js";
import { sendJson } from "../support/rest.js";
import { createTestDatabaseUrl, type TestDatabase } from "../support/test-database.js";
import { until } from "../support/until.js";

type Json = Record<string, unknown>;

interface Child {
  name: string;
  process: ChildProcess;
  /** Its log lines (JSON), as printed so far. */
  log: Json[];
  stderr: string;
  exited?: { code: number | null; signal: NodeJS.Signals | null };
}

const bin = join(process.cwd(), "bin/meshwork.js");
/** Start-up of a process under load (tsx, migrations): generous. */
const START_MS = 120_000;

test("a bad address in the list stops `meshwork gateway` with exit code 2, naming the setting and the item", (t) => {
  const { DATABASE_URL: _db, NATS_URL: _nats, ...env } = process.env;
  const out = spawnSync(process.execPath, [bin, "gateway", "--Services:Tracking:Address=http://127.0.0.1:9090,127.0.0.1:9091"], {
    encoding: "utf8",
    env,
  });
  t.is(out.status, 2, out.stderr);
  t.regex(out.stderr, /Invalid setting Services:Tracking:Address/);
  t.regex(out.stderr, /item 2 of 2, '127\.0\.0\.1:9091', is not one/);
});

/** This machine's TCP connections to a loopback `port` still open on the calling side (ESTABLISHED or CLOSE_WAIT). */
function openConnectionsTo(port: number): number {
  let count = 0;
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const [, , remote, state] = line.trim().split(/\s+/);
      if (!remote || !state) continue;
      if (Number.parseInt(remote.split(":")[1]!, 16) === port && (state === "01" || state === "08")) count++;
    }
  }
  return count;
}

const infra = realServers(test, "tracking and gateway processes on one PostgreSQL and NATS", ["postgres", "nats"]);
if (infra) {
  const children: Child[] = [];
  const dataDir = mkdtempSync(join(tmpdir(), "meshwork-processes-"));
  let db: TestDatabase | undefined;
  let tracking: Child[] = [];
  let gateways: string[] = [];
  let addresses: string[] = [];

  /** `meshwork <args>` as a child process, its log collected. */
  function meshwork(name: string, args: readonly string[]): Child {
    // Only the flags configure it: none of the test run's own database or bus variables.
    const { DATABASE_URL: _db, NATS_URL: _nats, ...env } = process.env;
    const proc = spawn(process.execPath, [bin, ...args, "--Logging:Level=info", "--Telemetry:Exporter=none"], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const child: Child = { name, process: proc, log: [], stderr: "" };
    createInterface({ input: proc.stdout! }).on("line", (line) => {
      try {
        child.log.push(JSON.parse(line) as Json);
      } catch {
        child.stderr += `${line}\n`;
      }
    });
    proc.stderr!.on("data", (chunk: Buffer) => (child.stderr += chunk.toString()));
    proc.on("exit", (code, signal) => (child.exited = { code, signal }));
    children.push(child);
    return child;
  }

  /** Waits for a log line of `child` and answers what `pick` takes from it; fails if the child ends first. */
  function fromLog<T>(child: Child, what: string, pick: (line: Json) => T | undefined): Promise<NonNullable<T>> {
    return until(
      () => {
        if (child.exited) throw new Error(`${child.name} ended (${JSON.stringify(child.exited)}) before ${what}: ${child.stderr}`);
        for (const line of child.log) {
          const value = pick(line);
          if (value !== undefined && value !== null) return value;
        }
        return undefined;
      },
      `${child.name}: ${what}`,
      { timeoutMs: START_MS, intervalMs: 50 },
    ) as Promise<NonNullable<T>>;
  }

  test.before(async () => {
    db = await createTestDatabaseUrl(infra.databaseUrl!);
    const shared = [`--Database:Url=${db.url}`, `--Nats:Url=${infra.natsUrl}`, "--Outbox:PollIntervalMs=200"];
    tracking = [1, 2].map((n) =>
      meshwork(`tracking ${n}`, ["serve", "tracking", `--Data:Dir=${join(dataDir, `tracking-${n}`)}`, "--Services:Port=0", ...shared]),
    );
    addresses = await Promise.all(
      tracking.map((child) =>
        fromLog(child, "the service host's address", (l) => (l.msg === "service host listening" ? String(l.url) : undefined)),
      ),
    );
    const gatewayChildren = [1, 2].map((n) =>
      meshwork(`gateway ${n}`, [
        "gateway",
        `--Services:Tracking:Address=${addresses.join(",")}`,
        "--Fronts:Tracking:Port=0",
        "--Fronts:Protection:Port=0",
        "--Gateway:Server:Port=0",
        "--Gateway:Telemetry:Enabled=false",
      ]),
    );
    gateways = await Promise.all(
      gatewayChildren.map((child) =>
        fromLog(child, "the tracking front", (l) => (l.front === "tracking" && l.url ? String(l.url) : undefined)),
      ),
    );
    // Ready when each gateway's health answer (from a tracking process, through gRPC) says so, twice:
    // the second call goes to the other address.
    for (const gateway of gateways) {
      for (let i = 0; i < 2; i++) {
        await until(async () => (await fetch(`${gateway}/api/health`).catch(() => undefined))?.status === 200, `${gateway}/api/health`, {
          timeoutMs: START_MS,
          intervalMs: 100,
        });
      }
    }
  });

  test.after.always(async () => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exited) return;
        const exited = new Promise((resolve) => child.process.once("exit", resolve));
        child.process.kill("SIGKILL");
        await exited;
      }),
    );
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const call = (base: string, method: string, path: string, body?: unknown) =>
    sendJson<Json & { items?: Json[] }>(`${base}${path}`, method, body);
  async function ok(base: string, method: string, path: string, body?: unknown) {
    const res = await call(base, method, path, body);
    if (res.status !== 200) throw new Error(`${method} ${path} via ${base}: ${res.status} ${res.text}`);
    return res.body;
  }
  const unique = (prefix: string) => `${prefix}-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;

  test.serial("a write through one gateway is read through the other", async (t) => {
    const [one, two] = gateways as [string, string];
    const created = await ok(one, "POST", "/api/assets", { name: "written through gateway 1" });
    // Twice: each gateway sends consecutive calls to its two tracking processes in turn.
    for (let i = 0; i < 2; i++) {
      t.like(await ok(two, "GET", `/api/assets/${String(created.id)}`), { id: created.id, name: "written through gateway 1" });
    }
  });

  test.serial("an event stream on gateway 2 carries the event of a write through gateway 1", async (t) => {
    const [one, two] = gateways as [string, string];
    const token = String((await ok(two, "POST", "/api/events/token")).token);
    const received: Json[] = [];
    const stream = new EventSource(`${two}/api/events?token=${token}`);
    t.teardown(() => stream.close());
    stream.addEventListener("data_changed", (e) => received.push(JSON.parse(String(e.data)) as Json));
    await new Promise<void>((resolve) => stream.addEventListener("open", () => resolve(), { once: true }));
    const created = await ok(one, "POST", "/api/assets", { name: "seen on the other gateway" });
    const event = await until(() => received.find((e) => e.id === created.id), "the asset's event on gateway 2's stream");
    t.like(event, { entity: "asset", action: "created", id: created.id });
  });

  test.serial(
    "a geofence defined through one gateway fires for positions sent through the other, on both tracking processes",
    async (t) => {
      const [one, two] = gateways as [string, string];
      const center = { latitude: -33.8 - Math.random(), longitude: 151.2 + Math.random() };
      const fence = await ok(one, "POST", "/api/geofences", {
        name: unique("fence"),
        centerLatitude: center.latitude,
        centerLongitude: center.longitude,
        radiusMeters: 500,
      });
      const devices = [
        await ok(two, "POST", "/api/devices", { identifier: unique("dev") }),
        await ok(two, "POST", "/api/devices", { identifier: unique("dev") }),
      ];
      const observedAt = (secondsAgo: number) => new Date(Date.now() - secondsAgo * 1000).toISOString();
      const outside = { latitude: center.latitude + 0.05, longitude: center.longitude };
      for (const device of devices)
        await ok(two, "POST", "/api/observations", { deviceId: device.id, observedAt: observedAt(60), ...outside });
      // The two entering positions are consecutive calls of gateway 2: one to each tracking process.
      for (const device of devices)
        await ok(two, "POST", "/api/observations", { deviceId: device.id, observedAt: observedAt(30), ...center });
      for (const device of devices) {
        const breaches = await ok(one, "GET", `/api/geofences/breaches?deviceId=${String(device.id)}`);
        t.is(breaches.items?.length, 1);
        t.like(breaches.items?.[0], { geofenceId: fence.id, deviceId: device.id, breachEventType: "Enter" });
      }
    },
  );

  test.serial("one tracking process killed: no request through either gateway fails", async (t) => {
    const [one, two] = gateways as [string, string];
    const asset = await ok(one, "POST", "/api/assets", { name: "outlives a tracking process" });
    const victim = tracking[0]!;
    const gone = new Promise((resolve) => victim.process.once("exit", resolve));
    victim.process.kill("SIGKILL");
    await gone;
    // A call sent on a connection as its process dies may have been acted on, so it is never
    // retried; what must not fail are the calls after the gateways saw the connection close.
    const port = Number(new URL(addresses[0]!).port);
    await until(() => openConnectionsTo(port) === 0, "the gateways closing their connections to the killed process");
    const failures: string[] = [];
    for (let i = 0; i < 8; i++) {
      for (const gateway of [one, two]) {
        const read = await call(gateway, "GET", `/api/assets/${String(asset.id)}`);
        if (read.status !== 200) failures.push(`GET via ${gateway}: ${read.status} ${read.text}`);
        const write = await call(gateway, "POST", "/api/assets", { name: `after the kill ${i}` });
        if (write.status !== 200) failures.push(`POST via ${gateway}: ${write.status} ${write.text}`);
      }
    }
    const warnings = children.filter((c) => c.name.startsWith("gateway")).flatMap((c) => c.log.filter((l) => Number(l.level) >= 40));
    t.deepEqual(failures, [], JSON.stringify(warnings));
    // The dead address was met (refused) and set aside, not merely missed.
    for (const gateway of children.filter((c) => c.name.startsWith("gateway"))) {
      const line = await until(
        () => gateway.log.find((l) => typeof l.msg === "string" && l.msg.includes("refused the connection")),
        `${gateway.name} logging the skipped address`,
      );
      t.like(line, { service: "tracking", address: addresses[0] });
    }
  });
}
