// Federated reports and Tor exits end to end through the REST front with fetch: the Tor exit list
// from a loopback source server (kept on a failed or empty fetch, and across a restart), the
// event of each refresh, federated reports with their API keys into the review queue (client
// address headers never in any log line), and the upstream worker against a loopback server that
// records what it receives.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import test, { type ExecutionContext } from "ava";
import { TorExitsRefreshedSchema } from "../../gen/protection/v1/events_pb.js";
import { createLogger } from "../../services/runtime/logging/index.js";
import { watchStream } from "../support/event-watch.js";
import { type ErrorBody, freshEmail, protectionClient } from "../support/protection.js";
import { realInfra } from "../support/real-infra.js";
import { startTestMesh, type TestMesh } from "../support/start-mesh.js";
import { createTestDatabaseUrl } from "../support/test-database.js";
import { until } from "../support/until.js";

interface Loopback {
  url: string;
  server: Server;
  close(): Promise<void>;
}

async function loopback(handle: (req: IncomingMessage, body: string) => { status: number; body: string }): Promise<Loopback> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const answer = handle(req, Buffer.concat(chunks).toString("utf8"));
      res.writeHead(answer.status, { "content-type": "text/plain" }).end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The Tor source: what it serves is set by the test; every fetch is counted. */
const tor = { status: 200, body: "", fetches: 0 };
/** The upstream: every POST recorded; its status is set by the test. */
const upstream = { status: 202, received: [] as { path: string; headers: IncomingMessage["headers"]; body: string; status: number }[] };

const KEY = "federation-key-0123456789";
const UPSTREAM_KEY = "upstream-key-abcdefghijkl";
const ADMIN = freshEmail("admin");
const logLines: string[] = [];
let torSource: Loopback;
let upstreamServer: Loopback;
let mesh: TestMesh;
let api: ReturnType<typeof protectionClient>;
let admin: string;
let user: string;
let dataDir: string;
let db: { url: string; drop(): Promise<void> } | undefined;

const flags = () => [
  `--Protection:Admins=${ADMIN}`,
  `--Protection:Federated:ApiKeys=${JSON.stringify([
    { Name: "peer", Key: KEY },
    { Name: "other", Key: "second-key-0123456789" },
  ])}`,
  `--Protection:Federated:Upstream=${upstreamServer.url}`,
  `--Protection:Federated:UpstreamApiKey=${UPSTREAM_KEY}`,
  "--Protection:Federated:UpstreamIntervalSeconds=5",
  `--Protection:TorExits:SourceUrl=${torSource.url}/torbulkexitlist`,
  "--Protection:TorExits:RefreshIntervalSeconds=5",
  "--Protection:RateLimits:Register:Limit=100000",
  "--Protection:RateLimits:LoginPerIp:Limit=100000",
  "--Logging:Level=debug",
  "--Logging:AccessLevel=info",
];

const TOR_LIST = [
  "# This is a comment",
  "185.220.101.5",
  "10.0.0.1 # trailing comment",
  "2001:DB8:0:0:0:0:0:1",
  "not-an-address",
  "185.220.101.5",
  "",
  "2001:db8::1",
  "1.2.3.256",
  "9.9.9.9",
].join("\n");

test.before(async () => {
  tor.body = TOR_LIST;
  torSource = await loopback(() => {
    tor.fetches++;
    return { status: tor.status, body: tor.body };
  });
  upstreamServer = await loopback((req, body) => {
    upstream.received.push({ path: req.url ?? "", headers: req.headers, body, status: upstream.status });
    return { status: upstream.status, body: "{}" };
  });
  dataDir = mkdtempSync(join(tmpdir(), "meshwork-federation-"));
  const infra = realInfra();
  db = infra.databaseUrl ? await createTestDatabaseUrl(infra.databaseUrl) : undefined;
  mesh = await startTestMesh({
    dataDir,
    flags: flags(),
    ...(db ? { databaseUrl: db.url } : {}),
    logger: createLogger({ level: "debug", destination: { write: (line: string) => void logLines.push(line) } }),
  });
  api = protectionClient(mesh.frontUrl("protection"));
  await api.register(ADMIN, "Admin");
  admin = (await api.login(ADMIN)).access_token;
  const someone = freshEmail("user");
  await api.register(someone, "User");
  user = (await api.login(someone)).access_token;
});

test.after.always(async () => {
  await mesh?.close();
  await db?.drop();
  await torSource?.close();
  await upstreamServer?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const expectError = (t: ExecutionContext, res: { status: number; body: unknown }, status: number, code: string, what = "") => {
  t.is(res.status, status, `${what} ${JSON.stringify(res.body)}`);
  t.is((res.body as ErrorBody).error, code, what);
  t.is(typeof (res.body as ErrorBody).message, "string", what);
};

interface TorExits {
  updated_at: string | null;
  exits: string[];
}
const EXPECTED = ["9.9.9.9", "10.0.0.1", "185.220.101.5", "2001:db8::1"];
const torExits = async () => (await api.call<TorExits>("GET", "/v1/tor-exits")).body;

test.serial("Tor exits: fetched at start, parsed canonically, no auth", async (t) => {
  const list = await until(async () => {
    const res = await api.call<TorExits>("GET", "/v1/tor-exits");
    return res.status === 200 && res.body.updated_at !== null && res.body;
  }, "the first Tor exit list");
  t.deepEqual(Object.keys(list).sort(), ["exits", "updated_at"]);
  t.deepEqual(list.exits, EXPECTED);
  t.false(Number.isNaN(Date.parse(list.updated_at!)));
});

test.serial("Tor exits: each refresh publishes tor_exits.refreshed; a failed or empty fetch keeps the last list", async (t) => {
  const watch = await watchStream(mesh, "protection.v1.tor_exits.>", "PROTECTION");
  t.teardown(() => watch.stop());
  tor.body = `${TOR_LIST}\n8.8.4.4\n`;
  const changed = await until(async () => {
    const list = await torExits();
    return list.exits.includes("8.8.4.4") && list;
  }, "the refreshed list");
  t.deepEqual(changed.exits, ["8.8.4.4", ...EXPECTED]);
  // Other suites' meshes publish on the same stream over real NATS (each refreshes the test list
  // of two addresses at start): this mesh's refresh is the one with its five.
  const message = await until(
    () =>
      watch.seen
        .filter((e) => e.subject === "protection.v1.tor_exits.refreshed")
        .map((e) => fromBinary(TorExitsRefreshedSchema, e.data))
        .find((m) => m.exitCount === 5),
    "the event of this refresh",
  );
  t.true(message.changed);
  t.truthy(message.eventId);

  for (const [status, body] of [
    [503, "unavailable"],
    [200, "# nothing but comments\nnot-an-address\n"],
  ] as const) {
    tor.status = status;
    tor.body = body;
    const before = tor.fetches;
    await until(() => tor.fetches >= before + 2, `two fetches answered ${status}`);
    const kept = await torExits();
    t.deepEqual(kept, changed, `the last list is kept after ${status} ${JSON.stringify(body)}`);
  }
  t.true(logLines.some((l) => l.includes("Tor exit list fetch failed")));
});

test.serial("federated reports: API keys, validation, 202 into the review queue as source federated", async (t) => {
  const report = (domain: string, extra: Record<string, unknown> = {}) => ({ domain, report_type: "heuristic", confidence: 0.9, ...extra });
  for (const apiKey of [undefined, "", "wrong-key-0123456789", `${KEY}x`]) {
    expectError(
      t,
      await api.call("POST", "/v1/federated/reports", {
        ...(apiKey === undefined ? {} : { api_key: apiKey }),
        reports: [report("a.example")],
      }),
      401,
      "INVALID_API_KEY",
      String(apiKey),
    );
  }
  const bad: [unknown, string][] = [
    [[], "reports"],
    [Array.from({ length: 501 }, (_, i) => report(`d${i}.example`)), "reports"],
    [[report("localhost")], "reports[0].domain"],
    [[report("ok.example"), report("ok2.example", { report_type: "whim" })], "reports[1].report_type"],
    [[report("ok.example", { confidence: 1.5 })], "reports[0].confidence"],
    [[report("ok.example", { confidence: -0.1 })], "reports[0].confidence"],
    [[{ domain: "ok.example", report_type: "other" }], "reports[0].confidence"],
  ];
  for (const [reports, field] of bad) {
    const res = await api.call<ErrorBody>("POST", "/v1/federated/reports", { api_key: KEY, reports });
    expectError(t, res, 400, "VALIDATION_ERROR", field);
    t.true(res.body.message.includes(field), `${field}: ${res.body.message}`);
  }
  expectError(t, await api.call("POST", "/v1/federated/reports", { api_key: KEY, reports: "many" }), 400, "VALIDATION_ERROR");
  const nothingQueued = await api.authed<{ total: number }>(admin, "GET", "/v1/admin/review-queue?per_page=200");
  t.false(JSON.stringify(nothingQueued.body).includes("ok.example"), "a refused batch records nothing");

  const accepted = await api.call<{ accepted: number }>("POST", "/v1/federated/reports", {
    api_key: "second-key-0123456789",
    reports: [report("Fed-One.Example."), report("fed-one.example", { confidence: 0.5, report_type: "other" }), report("fed-two.example")],
  });
  t.is(accepted.status, 202, accepted.text);
  t.deepEqual(accepted.body, { accepted: 3 });

  const queue = await api.authed<{
    data: { domain: string; sources: string[]; report_count: number; avg_confidence: number; reasons: string[] }[];
  }>(admin, "GET", "/v1/admin/review-queue?per_page=200");
  const one = queue.body.data.find((i) => i.domain === "fed-one.example");
  t.like(one, { sources: ["federated"], report_count: 2 });
  t.deepEqual(one?.reasons.sort(), ["heuristic", "other"]);
  t.is(Math.round(one!.avg_confidence * 100), 70);

  const big = await api.call<{ accepted: number }>("POST", "/v1/federated/reports", {
    api_key: KEY,
    reports: Array.from({ length: 500 }, (_, i) => report(`bulk${i}.example`)),
  });
  t.deepEqual([big.status, big.body], [202, { accepted: 500 }]);
});

test.serial("federated reports: X-Forwarded-For, X-Real-IP and Forwarded never reach a log line", async (t) => {
  const before = logLines.length;
  const res = await api.call<{ accepted: number }>(
    "POST",
    "/v1/federated/reports",
    { api_key: KEY, reports: [{ domain: "private.example", report_type: "user_report", confidence: 0.4 }] },
    { "x-forwarded-for": "203.0.113.77, 198.51.100.200", "x-real-ip": "198.51.100.9", forwarded: "for=192.0.2.60;proto=https" },
  );
  t.is(res.status, 202);
  const refused = await api.call(
    "POST",
    "/v1/federated/reports",
    { api_key: "nope-0123456789abcdef", reports: [{ domain: "private.example", report_type: "other", confidence: 1 }] },
    { "x-forwarded-for": "203.0.113.77", "x-real-ip": "198.51.100.9", forwarded: "for=192.0.2.60" },
  );
  t.is(refused.status, 401);
  const lines = await until(() => {
    const mine = logLines.slice(before).filter((l) => l.includes("/v1/federated/reports"));
    return mine.length >= 2 && mine;
  }, "the access lines of both requests");
  t.true(lines.length >= 2);
  for (const line of logLines.slice(before)) {
    for (const leaked of ["203.0.113.77", "198.51.100.200", "198.51.100.9", "192.0.2.60", KEY]) t.false(line.includes(leaked), line);
  }
});

test.serial("upstream worker: unsent agent reports as report_type + confidence 0.5 only; 503 retried next interval", async (t) => {
  upstream.received.length = 0;
  upstream.status = 503;
  for (const domain of ["up-one.example", "up-two.example"]) {
    const res = await api.authed(user, "POST", "/v1/blocklist/report", { domain, reason: "user_report", context: "secret context" });
    t.is(res.status, 202, res.text);
  }
  await until(() => upstream.received.length >= 1, "a refused call to the upstream");
  upstream.status = 202;
  const sent = await until(() => upstream.received.find((r) => r.status === 202), "the retried call");
  t.is(sent.path, "/v1/federated/reports");
  t.regex(sent.headers["content-type"] ?? "", /^application\/json/);
  t.is(sent.headers["x-forwarded-for"], undefined);
  t.deepEqual(JSON.parse(sent.body), {
    api_key: UPSTREAM_KEY,
    reports: [
      { domain: "up-one.example", report_type: "user_report", confidence: 0.5 },
      { domain: "up-two.example", report_type: "user_report", confidence: 0.5 },
    ],
  });
  t.deepEqual(JSON.parse(upstream.received[0]!.body), JSON.parse(sent.body), "the 503 batch was the same one");
  // Sent once: the next intervals find nothing unsent.
  const count = upstream.received.length;
  await api.authed(user, "POST", "/v1/blocklist/report", { domain: "up-three.example", reason: "heuristic" });
  const next = await until(() => upstream.received.slice(count).find((r) => r.status === 202), "the next call");
  t.deepEqual(JSON.parse(next.body).reports, [{ domain: "up-three.example", report_type: "heuristic", confidence: 0.5 }]);

  // Another refusal (400) is logged and dropped, not retried.
  upstream.status = 400;
  await api.authed(user, "POST", "/v1/blocklist/report", { domain: "up-four.example", reason: "other" });
  const dropped = await until(() => upstream.received.find((r) => r.status === 400), "the refused call");
  t.deepEqual(JSON.parse(dropped.body).reports, [{ domain: "up-four.example", report_type: "other", confidence: 0.5 }]);
  upstream.status = 202;
  await api.authed(user, "POST", "/v1/blocklist/report", { domain: "up-five.example", reason: "other" });
  const after = await until(() => upstream.received.find((r) => r.status === 202 && r.body.includes("up-five")), "a later call");
  t.false(after.body.includes("up-four"), "a dropped report is not sent again");
});

test.serial("a restart keeps the Tor exit list when the source fails", async (t) => {
  const kept = await torExits();
  t.true(kept.exits.length > 0);
  await mesh.close();
  tor.status = 500;
  const fetches = tor.fetches;
  mesh = await startTestMesh({ dataDir, flags: flags(), ...(db ? { databaseUrl: db.url } : {}) });
  api = protectionClient(mesh.frontUrl("protection"));
  await until(() => tor.fetches > fetches, "the fetch at start");
  t.deepEqual(await torExits(), kept);
});
