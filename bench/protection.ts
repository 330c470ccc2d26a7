// `npm run bench:protection`: device protection on real PostgreSQL with 100,000 devices seeded.
// The mesh runs in a child process (bench/servers.ts, role `protection`: the tuned mesh with the
// per-address limits lifted, since every client here is 127.0.0.1); the loads run here.
//   1. JWT-authenticated heartbeats at 64 connections, each to a random device of 64 accounts
//      (target >= 2,000/s; a fleet of 100,000 at the default 300 s interval needs 333/s).
//   2. JWT-authenticated GET /v1/devices/{id} against tracking's GET /api/assets/{id}, same mesh,
//      same connections, one after the other (target >= 0.8x).
//   3. Logins per second at the configured argon2id parameters, and the median hash time.
//   4. Device certificates issued per second (CSR parsed, certificate signed by a P-256 CA).
//   5. POST /v1/events, 100-event batches from random devices at 16 connections (target >= 20,000
//      events/s), each batch stored with its hourly rollup in one statement.
//   6. GET /v1/analytics/timeseries over 10,000,000 events (one account, 100 devices, 90 days), 1d
//      and 1h, one at a time (target < 500 ms): the rollup is seeded straight into PostgreSQL as
//      ingestion writes it (100 devices x 2,160 hours x block 45, tamper 1, bypass 1), since the
//      analytics read nothing else.
// `--quick` shortens every window (a smoke run, not figures); `--only=` picks parts (profiling with
// BENCH_CPU_PROF=protection). A benchmark, not a test.
import { cpus } from "node:os";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { loadMeshConfig } from "../services/mesh-config.js";
import { createPasswordHasher } from "../services/protection/passwords/password-hasher.js";
import { protectionSettings } from "../services/protection/settings.js";
import { generateDeviceCa, issueDeviceCertificate, parseCsr } from "../services/protection/pki/index.js";
import { makeCsr } from "../test/support/device-csr.js";
import { createTestDatabaseUrl, type TestDatabase } from "../test/support/test-database.js";
import { type Child, startChild, stopChild } from "./children.js";
import { backgroundLoad, cpuSnapshot, cpuUsage } from "./cpu.js";
import { closedLoop, httpLoad, type LoadOptions, type LoadResult } from "./load.js";

const LOCAL_POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres";
const quick = process.argv.includes("--quick");
const parts = ["heartbeats", "reads", "events", "analytics", "logins", "offline"] as const;
// `--only=heartbeats,reads` runs those parts (`offline`: the hash and certificate figures).
const only = process.argv
  .find((arg) => arg.startsWith("--only="))
  ?.slice("--only=".length)
  .split(",");
if (only?.some((part) => !parts.includes(part as (typeof parts)[number]))) throw new Error(`--only takes ${parts.join(",")}`);
const runs = (part: (typeof parts)[number]) => !only || only.includes(part);
const DEVICES = quick ? 10_000 : 100_000;
const ACCOUNTS = 64;
const PASSWORD = "bench horse battery staple";
const HEARTBEAT_CONNECTIONS = 64;
const READ_CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const EVENT_CONNECTIONS = 16;
const window = (connections: number): LoadOptions =>
  quick ? { connections, warmupMs: 1_000, durationMs: 2_000 } : { connections, warmupMs: 3_000, durationMs: 10_000 };

interface Measured {
  result: LoadResult;
  serverUsPerRequest: number;
}

async function main(): Promise<void> {
  const baseUrl = process.env.DATABASE_URL || LOCAL_POSTGRES;
  let database: TestDatabase | undefined;
  let child: Child | undefined;
  const cleanUp = async (): Promise<void> => {
    if (child) await stopChild(child.process);
    await database?.drop();
  };
  process.once("SIGINT", () => void cleanUp().finally(() => process.exit(130)));
  try {
    const background = await backgroundLoad(1_000);
    database = await createTestDatabaseUrl(baseUrl);
    child = await startChild("protection", [database.url], []);
    const ready = child.ready as { gatewayUrl: string; protectionUrl: string };
    const measure = async (run: (onMeasureStart: () => void) => Promise<LoadResult>): Promise<Measured> => {
      let before = cpuSnapshot(child!.process.pid!);
      const result = await run(() => (before = cpuSnapshot(child!.process.pid!)));
      return { result, serverUsPerRequest: cpuUsage(before, cpuSnapshot(child!.process.pid!), result.requests).serverUsPerRequest };
    };
    const maybe = (part: (typeof parts)[number], run: (onMeasureStart: () => void) => Promise<LoadResult>) =>
      runs(part) ? measure(run) : Promise.resolve(undefined);

    const api = client(ready.protectionUrl);
    process.stdout.write(`seeding ${ACCOUNTS} accounts and ${DEVICES.toLocaleString("en")} devices ... `);
    const accounts = await seedAccounts(api);
    const devices = await seedDevices(database.url, accounts);
    console.log("done");
    const assetId = await seedAsset(ready.gatewayUrl);
    const [firstDevice] = devices;

    // 1. Heartbeats: a random device per request, with its owner's token.
    const heartbeatBody = JSON.stringify({ status: "ok", blocklist_version: 0, agent_version: "1.0.0", integrity_ok: true });
    const heartbeats = await maybe("heartbeats", (start) =>
      httpLoad(`${ready.protectionUrl}/v1/devices/${firstDevice!.id}/heartbeat`, window(HEARTBEAT_CONNECTIONS), start, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: heartbeatBody,
        next: () => {
          const device = devices[Math.floor(Math.random() * devices.length)]!;
          return {
            path: `/v1/devices/${device.id}/heartbeat`,
            headers: { "content-type": "application/json", authorization: `Bearer ${device.token}` },
            body: heartbeatBody,
          };
        },
      }),
    );

    // 2. One device read with its owner's token, then tracking's asset read, on the same mesh.
    const deviceRead = await maybe("reads", (start) =>
      httpLoad(`${ready.protectionUrl}/v1/devices/${firstDevice!.id}`, window(READ_CONNECTIONS), start, {
        headers: { authorization: `Bearer ${firstDevice!.token}` },
      }),
    );
    const assetRead = await maybe("reads", (start) =>
      httpLoad(`${ready.gatewayUrl}/api/assets/${assetId}`, window(READ_CONNECTIONS), start),
    );

    // 5. Event batches of 100, a random device per request with its owner's token.
    const batch = (deviceId: string) => {
      const now = Date.now();
      return JSON.stringify({
        device_id: deviceId,
        events: Array.from({ length: 100 }, (_, i) => ({
          event_type: i % 10 === 0 ? "tamper_attempt" : "block",
          timestamp: new Date(now - ((i * 37_000) % 3_600_000)).toISOString(),
          domain: "casino.example",
          layer: "dns",
        })),
      });
    };
    const ingest = await maybe("events", (start) =>
      httpLoad(`${ready.protectionUrl}/v1/events`, window(EVENT_CONNECTIONS), start, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${firstDevice!.token}` },
        body: batch(firstDevice!.id),
        next: () => {
          const device = devices[Math.floor(Math.random() * devices.length)]!;
          return {
            path: "/v1/events",
            headers: { "content-type": "application/json", authorization: `Bearer ${device.token}` },
            body: batch(device.id),
          };
        },
      }),
    );

    // 6. The time series over 10,000,000 events of one account's 100 devices.
    const databaseUrl = database.url;
    const analytics = runs("analytics") ? await timeseries() : undefined;
    async function timeseries() {
      const [analyst] = await seedAccounts(api, 1);
      const rolledUp = await seedRollup(databaseUrl, analyst!.id);
      const series = async (interval: string) => {
        const times: number[] = [];
        const from = new Date(Date.now() - 90 * 86_400_000).toISOString();
        for (let i = 0; i < (quick ? 3 : 10); i++) {
          const t0 = performance.now();
          const res = await fetch(`${ready.protectionUrl}/v1/analytics/timeseries?interval=${interval}&from=${from}`, {
            headers: { authorization: `Bearer ${analyst!.token}` },
          });
          const body = (await res.json()) as { series: { block_count: number }[] };
          if (res.status !== 200) throw new Error(`timeseries answered ${res.status}`);
          times.push(performance.now() - t0);
          if (i === 0 && body.series.reduce((sum, p) => sum + p.block_count, 0) === 0) throw new Error("an empty series");
        }
        times.sort((a, b) => a - b);
        return { medianMs: times[Math.floor(times.length / 2)]!, maxMs: times[times.length - 1]! };
      };
      return { rolledUp, daily: await series("1d"), hourly: await series("1h") };
    }

    // 3. Logins through the front (each one argon2id verification on the mesh's worker threads).
    const logins = await maybe("logins", (start) =>
      closedLoop(
        async () => {
          const account = accounts[Math.floor(Math.random() * accounts.length)]!;
          const res = await api.post("/v1/auth/login", { email: account.email, password: PASSWORD });
          if (res.status !== 200) throw new Error(`login answered ${res.status}`);
        },
        window(cpus().length * 2),
        start,
      ),
    );
    await stopChild(child.process);
    child = undefined;

    const postgres = await postgresVersion(database.url);
    if (!runs("offline")) return report({ background, postgres, heartbeats, deviceRead, assetRead, logins, ingest, analytics });

    // The median argon2id hash at the shipped parameters, one at a time, with the mesh stopped.
    const { memoryKiB, iterations } = loadMeshConfig({ env: {}, flags: [], cwd: process.cwd() }).get(protectionSettings).protection
      .passwords;
    const hasher = createPasswordHasher({ memoryKiB, iterations });
    const hashTimes: number[] = [];
    for (let i = 0; i < (quick ? 5 : 25); i++) {
      const t0 = performance.now();
      await hasher.hash(PASSWORD);
      hashTimes.push(performance.now() - t0);
    }
    await hasher.close();
    hashTimes.sort((a, b) => a - b);

    // 4. Certificates: CSR parsed and checked, certificate built and signed, as registration does.
    const { ca } = await generateDeviceCa();
    const csrs = await Promise.all([makeCsr("ed25519"), makeCsr("p256")]);
    let issued = 0;
    const certStart = performance.now();
    const certEnd = certStart + (quick ? 1_000 : 5_000);
    while (performance.now() < certEnd) {
      const csr = parseCsr(csrs[issued % 2]!.pem);
      issueDeviceCertificate(ca, {
        csr,
        deviceId: crypto.randomUUID(),
        enrollmentId: crypto.randomUUID(),
        tier: "self",
        crlUrl: "http://127.0.0.1:8081/v1/pki/crl",
      });
      issued++;
    }
    const certsPerSecond = (issued / (performance.now() - certStart)) * 1000;

    report({
      background,
      postgres,
      heartbeats,
      deviceRead,
      assetRead,
      logins,
      hashMedianMs: hashTimes[Math.floor(hashTimes.length / 2)]!,
      hashParams: `${memoryKiB} KiB, ${iterations} passes`,
      certsPerSecond,
      ingest,
      analytics,
    });
  } finally {
    await cleanUp();
  }
}

function client(baseUrl: string) {
  const send = async (method: string, path: string, body?: unknown, token?: string) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };
  return { post: (path: string, body: unknown, token?: string) => send("POST", path, body, token) };
}

interface SeededAccount {
  id: string;
  email: string;
  token: string;
}

/** Accounts through the API (registration and login as users make them), a few at a time. */
async function seedAccounts(api: ReturnType<typeof client>, count = ACCOUNTS): Promise<SeededAccount[]> {
  const run = `${Date.now().toString(36)}${count === ACCOUNTS ? "" : "-x"}`;
  const accounts: SeededAccount[] = [];
  for (let start = 0; start < count; start += 8) {
    const batch = Array.from({ length: Math.min(8, count - start) }, async (_, i) => {
      const email = `bench-${run}-${start + i}@example.com`;
      const registered = await api.post("/v1/auth/register", { email, password: PASSWORD, display_name: `Bench ${start + i}` });
      if (registered.status !== 201) throw new Error(`register answered ${registered.status}: ${JSON.stringify(registered.body)}`);
      const login = await api.post("/v1/auth/login", { email, password: PASSWORD });
      if (login.status !== 200) throw new Error(`login answered ${login.status}`);
      return { id: registered.body.account_id as string, email, token: login.body.access_token as string };
    });
    accounts.push(...(await Promise.all(batch)));
  }
  return accounts;
}

/**
 * The fleet, straight into PostgreSQL (registering 100,000 devices through the API would take
 * longer than the benchmark): an active self enrollment per device, owners taken in turn.
 */
async function seedDevices(databaseUrl: string, accounts: SeededAccount[]): Promise<{ id: string; token: string }[]> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await db.query(
      `create temp table seed as
         select i, gen_random_uuid() as enrollment_id, gen_random_uuid() as device_id, ($1::uuid[])[1 + i % $2] as account_id
           from generate_series(1, $3) as i`,
      [accounts.map((a) => a.id), accounts.length, DEVICES],
    );
    await db.query(
      `insert into protection_enrollment (id, tier, status, token_hash, token_sealed, token_expires_at, redeemed_at, device_id,
         account_id, created_by, partner_account_id, organization_id, dns_blocking, app_blocking, bypass_detection,
         send_block_events, send_tamper_events, policy_type, delay_hours, unenroll_requested_at, eligible_at, unenrolled_at,
         created_at, updated_at)
       select enrollment_id, 'self', 'active', 'bench-' || i, null, now() + interval '1 day', now(), device_id,
         account_id, account_id, null, null, true, true, true, true, true, 'time_delay', 48, null, null, null, now(), now()
         from seed`,
    );
    await db.query(
      `insert into protection_device (id, account_id, enrollment_id, organization_id, assigned_at, platform, hostname,
         agent_version, status, last_heartbeat, blocklist_version, integrity_ok, certificate_serial, certificate_not_after,
         config_digest, created_at, updated_at)
       select device_id, account_id, enrollment_id, null, null, 'linux', 'host-' || i, '1.0.0', 'active', now(), 0, true,
         lpad(to_hex(i), 32, '0'), now() + interval '365 days', null, now(), now()
         from seed`,
    );
    await db.query("analyze protection_enrollment; analyze protection_device");
    const tokens = new Map(accounts.map((a) => [a.id, a.token]));
    const { rows } = await db.query<{ device_id: string; account_id: string }>("select device_id, account_id from seed");
    return rows.map((row) => ({ id: row.device_id, token: tokens.get(row.account_id)! }));
  } finally {
    await db.end();
  }
}

/**
 * 100 devices of `accountId` with their enrollments, and their hourly rollup over the last 90 days
 * as ingestion writes it: per device and hour, 45 blocks, 1 tamper and 1 bypass attempt. Answers
 * the number of events it stands for.
 */
async function seedRollup(databaseUrl: string, accountId: string): Promise<number> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await db.query(
      `create temp table analyst_seed as
         select i, gen_random_uuid() as enrollment_id, gen_random_uuid() as device_id from generate_series(1, 100) as i`,
    );
    await db.query(
      `insert into protection_enrollment (id, tier, status, token_hash, token_expires_at, redeemed_at, device_id, account_id,
         created_by, dns_blocking, app_blocking, bypass_detection, send_block_events, send_tamper_events, policy_type,
         delay_hours, created_at, updated_at)
       select enrollment_id, 'self', 'active', 'analyst-' || i, now(), now(), device_id, $1, $1, true, true, true, true, true,
         'time_delay', 48, now(), now()
         from analyst_seed`,
      [accountId],
    );
    await db.query(
      `insert into protection_device (id, account_id, enrollment_id, platform, hostname, agent_version, status, blocklist_version,
         certificate_serial, certificate_not_after, created_at, updated_at)
       select device_id, $1, enrollment_id, 'linux', 'analyst-' || i, '1.0.0', 'active', 0, 'a' || lpad(to_hex(i), 31, '0'),
         now() + interval '365 days', now(), now()
         from analyst_seed`,
      [accountId],
    );
    const { rows } = await db.query<{ events: string }>(
      `with inserted as (
         insert into protection_event_rollup (device_id, hour, enrollment_id, event_type, count, last_at)
         select s.device_id, h.hour, s.enrollment_id, t.event_type, t.n, h.hour + interval '30 minutes'
           from analyst_seed s
          cross join generate_series(date_trunc('hour', now()) - interval '2159 hours', date_trunc('hour', now()), interval '1 hour') as h(hour)
          cross join (values ('block', 45), ('tamper_attempt', 1), ('bypass_attempt', 1)) as t(event_type, n)
          order by 1, 2, 3, 4
         returning count
       )
       select sum(count)::text as events from inserted`,
    );
    await db.query("analyze protection_event_rollup; analyze protection_device");
    return Number(rows[0]?.events ?? 0);
  } finally {
    await db.end();
  }
}

async function seedAsset(trackingUrl: string): Promise<string> {
  const res = await fetch(`${trackingUrl}/api/assets`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "Van 7", description: "Benchmark asset", category: "vehicle", speedThresholdKmh: 90 }),
    signal: AbortSignal.timeout(10_000),
  });
  if (res.status !== 200) throw new Error(`seeding the asset answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

async function postgresVersion(url: string): Promise<string> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return (await db.query<{ server_version: string }>("show server_version")).rows[0]?.server_version ?? "unknown";
  } finally {
    await db.end();
  }
}

function report(r: {
  background: number;
  postgres: string;
  heartbeats: Measured | undefined;
  deviceRead: Measured | undefined;
  assetRead: Measured | undefined;
  logins: Measured | undefined;
  hashMedianMs?: number;
  hashParams?: string;
  certsPerSecond?: number;
  ingest?: Measured;
  analytics?: { rolledUp: number; daily: { medianMs: number; maxMs: number }; hourly: { medianMs: number; maxMs: number } };
}): void {
  const cpu = cpus();
  console.log(
    `\n${cpu.length} × ${cpu[0]?.model}, Node ${process.version}, PostgreSQL ${r.postgres}; ${DEVICES.toLocaleString("en")} devices` +
      `${quick ? " (--quick: short windows, not figures)" : ""}; background load before the run ${(r.background * 100).toFixed(0)} %`,
  );
  const row = (label: string, m: Measured | undefined) =>
    m &&
    console.log(
      `${label.padEnd(52)} ${m.result.rps.toFixed(0).padStart(7)} /s  p50 ${m.result.p50.toFixed(2)} ms  p99 ${m.result.p99.toFixed(2)} ms  ` +
        `server ${m.serverUsPerRequest.toFixed(0)} µs/req  errors ${m.result.errors}`,
    );
  row(`heartbeats, ${HEARTBEAT_CONNECTIONS} connections`, r.heartbeats);
  row(`GET /v1/devices/{id} (JWT), ${READ_CONNECTIONS} connections`, r.deviceRead);
  row(`GET /api/assets/{id} (tracking), ${READ_CONNECTIONS} connections`, r.assetRead);
  row(`logins, ${cpus().length * 2} in flight`, r.logins);
  if (r.hashMedianMs !== undefined) {
    console.log(`${"argon2id hash, median of one at a time".padEnd(52)} ${r.hashMedianMs.toFixed(1).padStart(7)} ms  (${r.hashParams})`);
  }
  if (r.certsPerSecond !== undefined) {
    console.log(`${"device certificates issued (parse CSR + sign)".padEnd(52)} ${r.certsPerSecond.toFixed(0).padStart(7)} /s`);
  }
  row(`POST /v1/events (100-event batches), ${EVENT_CONNECTIONS} connections`, r.ingest);
  const eventsPerSecond = r.ingest ? r.ingest.result.rps * 100 : 0;
  if (r.ingest) console.log(`${"  = events ingested".padEnd(52)} ${eventsPerSecond.toFixed(0).padStart(7)} /s`);
  const a = r.analytics;
  if (a) {
    for (const [label, m] of [
      ["1d", a.daily],
      ["1h", a.hourly],
    ] as const) {
      console.log(
        `${`timeseries ${label}, 90 days, ${(a.rolledUp / 1e6).toFixed(2)}M events of 100 devices`.padEnd(52)} median ${m.medianMs.toFixed(1)} ms  max ${m.maxMs.toFixed(1)} ms`,
      );
    }
  }
  const verdict = (ok: boolean) => (ok ? "met" : "NOT met");
  console.log("");
  if (r.heartbeats) {
    const rate = r.heartbeats.result.rps;
    console.log(`target heartbeats >= 2,000/s: ${rate.toFixed(0)}/s, ${verdict(rate >= 2_000)}`);
  }
  if (r.deviceRead && r.assetRead) {
    const ratio = r.deviceRead.result.rps / r.assetRead.result.rps;
    console.log(`target device read >= 0.8x asset read: ${ratio.toFixed(2)}x, ${verdict(ratio >= 0.8)}`);
  }
  if (r.ingest) console.log(`target events >= 20,000/s: ${eventsPerSecond.toFixed(0)}/s, ${verdict(eventsPerSecond >= 20_000)}`);
  if (a) {
    const slowest = Math.max(a.daily.medianMs, a.hourly.medianMs);
    console.log(`target timeseries < 500 ms (1d and 1h): ${slowest.toFixed(1)} ms, ${verdict(slowest < 500)}`);
  }
}

await main();
