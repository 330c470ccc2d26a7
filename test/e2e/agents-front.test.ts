// The agent front's policy as clients see it (issue 14, "Keys, rate limit, CORS", "Health",
// errors): fetch for REST, @grpc/grpc-js for x-api-key, the meshwork command for start-up
// refusals. /api paths come from a test-only contract (meshwork.testing.v1.ProbeService) served by
// the real agents module's declarations (settings, keys and roles, front policy, interceptors).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import test, { type ExecutionContext } from "ava";
import { ProbeService } from "../gen/meshwork/testing/v1/front_policy_pb.js";
import type { AuditEntry } from "../../services/agents/audit/types.js";
import { agentsFrontInterceptors, type FrontSettings } from "../../services/agents/front-settings.js";
import { agentsModule } from "../../services/agents/index.js";
import { modules as registered } from "../../services/registry.js";
import { currentIdentity } from "../../services/runtime/auth/index.js";
import { clientAddressOf } from "../../services/runtime/host/client-address.js";
import { definePartialService } from "../../services/runtime/host/index.js";
import { createLogger } from "../../services/runtime/logging/index.js";
import { defineModule, type ServiceModule } from "../../services/runtime/module/index.js";
import { realInfra } from "../support/real-infra.js";
import { sendJson } from "../support/rest.js";
import { startTestMesh, type TestMesh, type TestMeshOptions } from "../support/start-mesh.js";
import { until } from "../support/until.js";

const USER_KEY = "user-key-5f0c1e9a7b3d4c2e";
const OPERATOR_KEY = "operator-key-8a2b6c4d1e3f5a7b";
const ADMIN_KEY = "admin-key-3c5e7a9b1d2f4e6a";
const keys = [
  { Key: USER_KEY, Name: "reader", Role: "User" },
  { Key: OPERATOR_KEY, Name: "ops", Role: "Operator" },
  { Key: ADMIN_KEY, Name: "root", Role: "Admin" },
];
const authOn = ["--Gateway:Auth:Enabled=true", `--Gateway:Auth:ApiKeys=${JSON.stringify(keys)}`];

/** What the front's refusals recorded through the module's AuditLog hook. */
const audited: AuditEntry[] = [];

/** The agents module with the probe contract beside its own services, and an audit log that records here. */
const probeAgents: ServiceModule = defineModule({
  ...agentsModule,
  services: [...agentsModule.services, ProbeService],
  async start(deps) {
    const started = await agentsModule.start(deps);
    const reply = (header: Headers) => ({ caller: currentIdentity().name ?? "", clientAddress: clientAddressOf(header) });
    const probe = definePartialService(ProbeService, {
      read: (_req, ctx) => reply(ctx.requestHeader),
      operate: (_req, ctx) => reply(ctx.requestHeader),
      administer: (_req, ctx) => reply(ctx.requestHeader),
    });
    const audit = {
      async record(_em: unknown, entry: AuditEntry) {
        audited.push(entry);
      },
    };
    const interceptors = agentsFrontInterceptors({ settings: deps.settings as FrontSettings, db: deps.db, logger: deps.logger, audit });
    return { ...started, services: [...started.services, probe], interceptors };
  },
});
const hosted = registered.map((m) => (m.name === "agents" ? probeAgents : m));

async function mesh(t: ExecutionContext, flags: string[], options: TestMeshOptions = {}): Promise<TestMesh> {
  const m = await startTestMesh({ ...options, flags, modules: hosted });
  t.teardown(() => m.close());
  return m;
}

const front = (m: TestMesh) => m.frontUrl("agents");
const get = (m: TestMesh, path: string, headers: Record<string, string> = {}) => sendJson(`${front(m)}${path}`, "GET", undefined, headers);
const key = (k: string) => ({ "x-api-key": k });

test.serial("health needs no key, is not limited, and reports every check in the documented shape", async (t) => {
  const m = await mesh(t, [...authOn, "--Gateway:RateLimit:MaxRequestsPerMinute=1"]);
  for (let i = 0; i < 3; i++) {
    const health = await get(m, "/health");
    t.is(health.status, 200);
    t.is(health.headers.get("x-ratelimit-limit"), null, "health carries no rate-limit headers");
  }
  const { body } = await get(m, "/health");
  const report = body as { status: string; totalDuration: string; version: string; entries: Record<string, Record<string, unknown>> };
  t.regex(report.totalDuration, /^\d{2}:\d{2}:\d{2}\.\d{7}$/);
  t.regex(report.version, /^\d+\.\d+\.\d+/);
  t.deepEqual(Object.keys(report.entries), ["gateway", "providers", "session_store", "disk_space", "memory"]);
  const tags = Object.fromEntries(Object.entries(report.entries).map(([name, e]) => [name, e.tags]));
  t.deepEqual(tags, { gateway: [], providers: ["providers"], session_store: ["storage"], disk_space: ["storage"], memory: ["memory"] });
  for (const entry of Object.values(report.entries)) {
    t.regex(entry.duration as string, /^\d{2}:\d{2}:\d{2}\.\d{7}$/);
    t.true(["Healthy", "Degraded", "Unhealthy"].includes(entry.status as string));
    t.is(typeof entry.description, "string");
  }
  t.like(report.entries.gateway!.data, { activeAgents: 0 });
  t.regex((report.entries.gateway!.data as { uptime: string }).uptime, /^\d{2}:\d{2}:\d{2}\.\d{7}$/);
  t.like(report.entries.providers, { status: "Degraded", data: { available: [], unavailable: [], availableCount: 0, totalCount: 0 } });
  const disk = report.entries.disk_space!.data as { path: string; freeBytes: number; thresholdBytes: number };
  t.is(disk.thresholdBytes, 100 * 1024 * 1024);
  t.true(disk.freeBytes > 0);
  const memory = report.entries.memory!.data as { heapUsedBytes: number; thresholdBytes: number };
  t.is(memory.thresholdBytes, 1024 * 1024 * 1024);
  t.true(memory.heapUsedBytes > 0);
  const dbPath = (report.entries.session_store!.data as { dbPath: string }).dbPath;
  t.false(/:[^/@:]+@/.test(dbPath), "no password in dbPath");
  const live = await get(m, "/health/live", key("wrong-key-but-health-ignores-it"));
  t.is(live.status, 200);
  t.deepEqual(live.body, { status: "Live" });
});

test.serial(
  "session_store is Unhealthy without agents_session: /health stays 200, /health/ready answers 503 with the report",
  async (t) => {
    const m = await mesh(t, []);
    const sql = (text: string) => m.db!.em().getConnection().execute(text);
    await sql(`drop table if exists "agents_session" cascade`);
    const unhealthy = await until(async () => {
      const ready = await get(m, "/health/ready");
      return ready.status === 503 ? ready : undefined;
    }, "readiness 503");
    t.like(unhealthy.body, { status: "Unhealthy", entries: { session_store: { status: "Unhealthy", tags: ["storage"] } } });
    t.is((await get(m, "/health")).status, 200, "/health is always 200");
    t.like((await get(m, "/health")).body, { status: "Unhealthy" });
    await sql(`create table "agents_session" ("id" text primary key)`);
    await sql(`insert into "agents_session" values ('a'), ('b')`);
    // At most 2 s old: the cached Unhealthy report gives way.
    const ready = await until(
      async () => {
        const r = await get(m, "/health/ready");
        return r.status === 200 ? r : undefined;
      },
      "readiness 200",
      { timeoutMs: 5000 },
    );
    t.like(ready.body, { status: "Degraded", entries: { session_store: { status: "Healthy", data: { sessionCount: 2 } } } });
  },
);

test.serial("keys and roles: 401 without or with an unknown key, 403 below the role, the key's Name reaches the service", async (t) => {
  const m = await mesh(t, authOn);
  const missing = await get(m, "/api/probe");
  t.is(missing.status, 401);
  t.like(missing.body, { error: "Unauthorized" });
  t.is(typeof (missing.body as { message: string }).message, "string");
  const unknown = await get(m, "/api/probe", key("not-a-configured-key-0000"));
  t.is(unknown.status, 401);
  t.false(unknown.text.includes("not-a-configured-key"), "the key is not echoed");
  const query = await get(m, `/api/probe?api_key=${USER_KEY}`);
  t.not(query.status, 200, "REST takes only X-API-Key");
  t.false(query.text.includes(USER_KEY));
  t.like((await get(m, "/api/probe", key(USER_KEY))).body, { caller: "reader" });
  t.like((await get(m, "/api/probe", key(ADMIN_KEY))).body, { caller: "root" }, "a higher role passes");
  const forbidden = await sendJson(`${front(m)}/api/probe/operate`, "POST", {}, key(USER_KEY));
  t.is(forbidden.status, 403);
  t.like(forbidden.body, { error: "Forbidden" });
  t.false(forbidden.text.includes(USER_KEY));
  t.is((await sendJson(`${front(m)}/api/probe/operate`, "POST", {}, key(OPERATOR_KEY))).status, 200);
  t.is((await sendJson(`${front(m)}/api/probe/x`, "DELETE", undefined, key(OPERATOR_KEY))).status, 403);
  t.like((await sendJson(`${front(m)}/api/probe/x`, "DELETE", undefined, key(ADMIN_KEY))).body, { caller: "root" });
});

test.serial("gRPC callers send x-api-key metadata", async (t) => {
  const m = await mesh(t, authOn);
  const definition = protoLoader.loadSync("meshwork/testing/v1/front_policy.proto", {
    includeDirs: [
      fileURLToPath(new URL("../proto", import.meta.url)),
      fileURLToPath(new URL("../../proto", import.meta.url)),
      fileURLToPath(new URL("../../node_modules/google-proto-files", import.meta.url)),
    ],
  });
  // biome-ignore lint/suspicious/noExplicitAny: loaded at run time
  const pkg = grpc.loadPackageDefinition(definition) as any;
  const client = new pkg.meshwork.testing.v1.ProbeService(`127.0.0.1:${m.servicePort}`, grpc.credentials.createInsecure());
  t.teardown(() => client.close());
  const call = (method: string, apiKey?: string) =>
    new Promise<{ caller: string }>((resolve, reject) => {
      const metadata = new grpc.Metadata();
      if (apiKey) metadata.set("x-api-key", apiKey);
      client[method]({ name: "n" }, metadata, (err: grpc.ServiceError | null, res: { caller: string }) =>
        err ? reject(err) : resolve(res),
      );
    });
  t.is((await call("Read", OPERATOR_KEY)).caller, "ops");
  const missing = await t.throwsAsync(call("Read"));
  t.is((missing as grpc.ServiceError).code, grpc.status.UNAUTHENTICATED);
  const low = await t.throwsAsync(call("Administer", OPERATOR_KEY));
  t.is((low as grpc.ServiceError).code, grpc.status.PERMISSION_DENIED);
  t.is((low as grpc.ServiceError).metadata.get("x-ratelimit-limit")[0], "120", "the window's headers reach gRPC callers too");
});

test.serial("rate limit: headers on every answer, 401 included; 429 with Retry-After; key Name and client IP windows apart", async (t) => {
  const m = await mesh(t, [...authOn, "--Gateway:RateLimit:MaxRequestsPerMinute=3"]);
  audited.length = 0;
  const first = await get(m, "/api/probe", key(USER_KEY));
  t.is(first.status, 200);
  t.is(first.headers.get("x-ratelimit-limit"), "3");
  t.is(first.headers.get("x-ratelimit-remaining"), "2", "the first of a window shows Limit - 1");
  const reset = Number(first.headers.get("x-ratelimit-reset"));
  const nowSeconds = Date.now() / 1000;
  t.true(reset > nowSeconds + 55 && reset <= Math.ceil(nowSeconds) + 61, `reset ${reset} is a minute after the first hit`);
  t.is((await get(m, "/api/probe", key(USER_KEY))).headers.get("x-ratelimit-remaining"), "1");
  t.is((await get(m, "/api/probe", key(USER_KEY))).headers.get("x-ratelimit-remaining"), "0");
  const over = await get(m, "/api/probe", key(USER_KEY));
  t.is(over.status, 429);
  t.like(over.body, { error: "Too Many Requests" });
  t.is(over.headers.get("x-ratelimit-remaining"), "0");
  t.is(over.headers.get("x-ratelimit-limit"), "3");
  const retryAfter = Number(over.headers.get("retry-after"));
  t.true(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
  // Another key has its own window; the same Name behind another key would share it.
  t.is((await get(m, "/api/probe", key(ADMIN_KEY))).headers.get("x-ratelimit-remaining"), "2");
  // 401s count on the client IP, and carry the headers.
  const refused = await get(m, "/api/probe");
  t.is(refused.status, 401);
  t.is(refused.headers.get("x-ratelimit-remaining"), "2");
  await get(m, "/api/probe");
  await get(m, "/api/probe");
  const ipOver = await get(m, "/api/probe", key("unknown-key-0123456789abc"));
  t.is(ipOver.status, 429, "the client IP's window is used up by its 401s");
  t.true(Number(ipOver.headers.get("retry-after")) >= 1);
  t.is((await get(m, "/api/probe", key(OPERATOR_KEY))).status, 200, "a key's window is apart from the IP's");
  t.is((await get(m, "/health")).status, 200, "health is never limited");
  t.is((await get(m, "/api/probe", key(USER_KEY))).status, 429);
  const forbidden = await sendJson(`${front(m)}/api/probe/operate`, "POST", {}, key(ADMIN_KEY.replace("admin", "nobody")));
  t.is(forbidden.status, 429, "the unknown key shares the IP's used-up window");
  const admin = await sendJson(`${front(m)}/api/probe/x`, "DELETE", undefined, key(OPERATOR_KEY));
  t.is(admin.status, 403);
  // One audit warning per refused request, the key's Name as userId, never a key.
  const seen = await until(
    () => (audited.length >= 8 ? audited.map((e) => [e.action, e.userId ?? "-", e.severity].join(" ")) : undefined),
    "audit entries",
  );
  const expected = [
    "ratelimit.exceeded reader warning",
    "auth.failed - warning",
    "auth.failed - warning",
    "auth.failed - warning",
    "ratelimit.exceeded - warning",
    "ratelimit.exceeded reader warning",
    "ratelimit.exceeded - warning",
    "auth.forbidden ops warning",
  ];
  t.deepEqual([...seen].sort(), expected.sort());
  t.is(audited.length, 8, "one entry per refused request");
  const text = JSON.stringify(audited);
  for (const secret of [USER_KEY, OPERATOR_KEY, ADMIN_KEY]) t.false(text.includes(secret));
  t.like(audited[0], { resource: "meshwork.testing.v1.ProbeService/Read", detail: { clientIp: "127.0.0.1" } });
});

test.serial("two instances share one window (a second mesh on one PostgreSQL, or a gateway-only front)", async (t) => {
  const a = await mesh(t, [...authOn, "--Gateway:RateLimit:MaxRequestsPerMinute=4"]);
  const infra = realInfra();
  const b = infra.databaseUrl
    ? await mesh(t, [...authOn, "--Gateway:RateLimit:MaxRequestsPerMinute=4"], { databaseUrl: a.config.runtime.database.url })
    : await mesh(t, [...authOn, "--Gateway:RateLimit:MaxRequestsPerMinute=4", `--Services:Agents:Address=${a.serviceUrl}`], {
        mode: { kind: "gateway" },
      });
  const remaining: (string | null)[] = [];
  for (const m of [a, b, a, b]) remaining.push((await get(m, "/api/probe", key(USER_KEY))).headers.get("x-ratelimit-remaining"));
  t.deepEqual(remaining, ["3", "2", "1", "0"]);
  t.is((await get(b, "/api/probe", key(USER_KEY))).status, 429);
  t.is((await get(a, "/api/probe", key(USER_KEY))).status, 429);
});

test.serial("CORS: preflight 204 with the origin, methods and headers; refused origins and methods get no Allow headers", async (t) => {
  const open = await mesh(t, []);
  const preflight = (m: TestMesh, origin: string, method: string, headers = "x-api-key, content-type") =>
    fetch(`${front(m)}/api/probe`, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": method, "access-control-request-headers": headers },
    });
  const any = await preflight(open, "https://app.test", "POST");
  t.is(any.status, 204);
  t.is(any.headers.get("access-control-allow-origin"), "*");
  t.is(any.headers.get("access-control-allow-methods"), "POST");
  t.is(any.headers.get("access-control-allow-headers"), "x-api-key, content-type");
  t.is(any.headers.get("access-control-allow-credentials"), null);
  t.regex(any.headers.get("vary") ?? "", /Origin/);
  const actual = await get(open, "/api/probe", { origin: "https://app.test" });
  t.is(actual.headers.get("access-control-allow-origin"), "*");
  const exposed = (actual.headers.get("access-control-expose-headers") ?? "").toLowerCase();
  for (const name of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after", "x-request-id"]) {
    t.true(exposed.includes(name), name);
  }

  const strict = await mesh(t, [
    "--Gateway:Cors:AllowedOrigins=https://good.test",
    "--Gateway:Cors:AllowedMethods:0=GET",
    "--Gateway:Cors:AllowedMethods:1=POST",
    "--Gateway:Cors:AllowCredentials=true",
  ]);
  const good = await preflight(strict, "https://good.test", "POST");
  t.is(good.status, 204);
  t.is(good.headers.get("access-control-allow-origin"), "https://good.test");
  t.is(good.headers.get("access-control-allow-credentials"), "true");
  t.is(good.headers.get("access-control-allow-methods"), "GET, POST");
  t.regex(good.headers.get("vary") ?? "", /Origin/);
  for (const refused of [await preflight(strict, "https://evil.test", "POST"), await preflight(strict, "https://good.test", "DELETE")]) {
    t.is(refused.status, 204);
    const allow = [...refused.headers.keys()].filter((h) => h.startsWith("access-control-allow"));
    t.deepEqual(allow, []);
  }
  const evil = await get(strict, "/api/probe", { origin: "https://evil.test" });
  t.is(evil.headers.get("access-control-allow-origin"), null);
  const credentialed = await get(strict, "/api/probe", { origin: "https://good.test" });
  t.is(credentialed.headers.get("access-control-allow-origin"), "https://good.test");
  t.is(credentialed.headers.get("access-control-allow-credentials"), "true");
});

test.serial(
  "errors are { error: <reason phrase>, message }, also for the front's own 404, 405, 413 and 415; rate limit off: no headers",
  async (t) => {
    const m = await mesh(t, [
      "--Fronts:BodyLimitBytes=1024",
      "--Gateway:RateLimit:Enabled=false",
      "--Gateway:RateLimit:MaxRequestsPerMinute=1",
    ]);
    for (let i = 0; i < 3; i++) {
      const answer = await get(m, "/api/probe");
      t.is(answer.status, 200, "no 429 with the limit off");
      t.is(answer.headers.get("x-ratelimit-limit"), null);
    }
    const cases: [Promise<Awaited<ReturnType<typeof get>>>, number, string][] = [
      [get(m, "/api/nothing-here"), 404, "Not Found"],
      [sendJson(`${front(m)}/api/probe`, "PUT", {}), 405, "Method Not Allowed"],
      [sendJson(`${front(m)}/api/probe/operate`, "POST", { name: "x".repeat(2000) }), 413, "Payload Too Large"],
      [
        fetch(`${front(m)}/api/probe/operate`, { method: "POST", headers: { "content-type": "text/plain" }, body: "hi" }).then(
          async (res) => ({
            status: res.status,
            body: await res.json(),
          }),
        ) as never,
        415,
        "Unsupported Media Type",
      ],
      [sendJson(`${front(m)}/api/probe/operate`, "POST", { bogus: 1 }), 400, "Bad Request"],
    ];
    for (const [answer, status, error] of cases) {
      const { status: got, body } = await answer;
      t.is(got, status, error);
      t.is((body as { error: string }).error, error);
      t.is(typeof (body as { message: string }).message, "string");
    }
  },
);

test.serial("X-Forwarded-For names the client only from a trusted proxy with ForwardedHeaders", async (t) => {
  const forwarded = { "x-forwarded-for": "203.0.113.7" };
  const trusting = await mesh(t, ["--Gateway:Server:ForwardedHeaders=true", "--Gateway:Server:TrustedProxies:0=127.0.0.0/8"]);
  t.like((await get(trusting, "/api/probe", forwarded)).body, { clientAddress: "203.0.113.7" });
  const off = await mesh(t, ['--Gateway:Server:TrustedProxies=["127.0.0.1"]']);
  t.like((await get(off, "/api/probe", forwarded)).body, { clientAddress: "127.0.0.1" });
});

test.serial("Verbose: a line per request with method, path, status, ms, key name and client IP, never the key", async (t) => {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      raw.push(String(chunk));
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const logger = createLogger({ level: "info", destination });
  const m = await mesh(t, [...authOn, "--Gateway:Server:Verbose=true", "--Logging:AccessLevel=silent"], { logger });
  await get(m, "/api/probe", key(OPERATOR_KEY));
  await get(m, `/api/probe?api_key=${ADMIN_KEY}`);
  await get(m, "/api/probe");
  const requests = await until(() => {
    const found = lines.filter((l) => l.msg === "request" && l.front === "agents");
    return found.length >= 3 ? found : undefined;
  }, "three request lines");
  t.like(requests[0], { method: "GET", path: "/api/probe", status: 200, keyName: "ops", clientIp: "127.0.0.1" });
  t.is(typeof requests[0]!.durationMs, "number");
  t.like(requests[1], { path: "/api/probe", status: 400 }, "the query (and its api_key) is not logged");
  t.like(requests[2], { status: 401, keyName: null, clientIp: "127.0.0.1" });
  const all = raw.join("");
  for (const secret of [OPERATOR_KEY, ADMIN_KEY, USER_KEY]) t.false(all.includes(secret));
  t.false(all.includes("api_key="));
});

const bin = join(process.cwd(), "bin/meshwork.js");
function refusal(t: ExecutionContext, flags: string[]) {
  const dir = mkdtempSync(join(tmpdir(), "meshwork-agents-front-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const out = spawnSync(process.execPath, [bin, `--Data:Dir=${dir}`, "--Services:Port=0", ...flags], {
    encoding: "utf8",
    env: { ...process.env, DATABASE_URL: "", NATS_URL: "" },
    timeout: 60_000,
  });
  return { status: out.status, text: `${out.stdout}${out.stderr}` };
}

test.serial("start-up refusals: exit 2 naming the setting, never the key", (t) => {
  const weak = [
    ["short-key-123", 0],
    ["aaaaaaaaaaaaaaaaaaaaaaaa", 0],
    ["my-changeme-key-0123456789", 1],
    ["Your-API-Key-goes-here-12345", 1],
    ["placeholder-0123456789abcdef", 1],
    ["an-example-key-0123456789ab", 1],
  ] as const;
  for (const [bad, index] of weak) {
    const list =
      index === 0
        ? [{ Key: bad, Name: "a", Role: "Admin" }]
        : [
            { Key: ADMIN_KEY, Name: "a", Role: "Admin" },
            { Key: bad, Name: "b", Role: "User" },
          ];
    const out = refusal(t, ["--Gateway:Auth:Enabled=true", `--Gateway:Auth:ApiKeys=${JSON.stringify(list)}`]);
    t.is(out.status, 2, bad);
    t.true(out.text.includes(`Gateway:Auth:ApiKeys:${index}:Key`), out.text);
    t.false(out.text.includes(bad), "the key is never shown");
  }
  const none = refusal(t, ["--Gateway:Auth:Enabled=true"]);
  t.is(none.status, 2);
  t.regex(none.text, /Gateway:Auth:ApiKeys/);
  const publicOpen = refusal(t, ["--Gateway:Server:Host=0.0.0.0"]);
  t.is(publicOpen.status, 2);
  t.regex(publicOpen.text, /Gateway:Server:Host=0\.0\.0\.0/);
  t.regex(publicOpen.text, /Gateway:Auth:AllowAnonymousPublicBind/);
});

test.serial("auth off on a public host starts with Gateway:Auth:AllowAnonymousPublicBind", async (t) => {
  const m = await mesh(t, ["--Gateway:Server:Host=0.0.0.0", "--Gateway:Auth:AllowAnonymousPublicBind=true"]);
  const port = new URL(front(m)).port;
  t.is((await sendJson(`http://127.0.0.1:${port}/health/live`, "GET")).status, 200);
});
