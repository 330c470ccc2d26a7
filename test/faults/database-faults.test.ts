// A failed statement is logged by SQL state and statement kind, never with its values; a database
// that cannot be reached answers 503 with Retry-After on REST and Unavailable on Connect, never 500.
// Runs on the embedded PostgreSQL and, when DATABASE_URL is set, on a real one, through a TCP
// relay the test can cut, as a network partition or a stopped server would.
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, connect, type NetConnectOpts, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Migration } from "@mikro-orm/migrations";
import { MikroORM, PostgreSqlDriver, type EntityManager } from "@mikro-orm/postgresql";
import test, { type ExecutionContext } from "ava";
import { createFront } from "../../gateway/index.js";
import { LibraryService } from "../gen/meshwork/testing/v1/transcoding_pb.js";
import { openDatabase, type Database } from "../../services/runtime/database/index.js";
import {
  buildRoutes,
  createDirectTransport,
  definePartialService,
  errorInterceptor,
  startServiceHost,
} from "../../services/runtime/host/index.js";
import { createLogger } from "../../services/runtime/logging/index.js";
import { createTestDatabaseUrl } from "../support/test-database.js";
import { realInfra, realServers } from "../support/real-infra.js";
import { testLogger } from "../support/test-logger.js";

class CreateBooks extends Migration {
  override up(): void {
    this.addSql('create table "faults_book" ("id" serial primary key, "title" text not null unique check (length("title") < 40));');
  }
}

/** A TCP relay to the database that can be cut: open connections reset, new ones refused. */
async function startRelay(target: NetConnectOpts): Promise<{ port: number; cut(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(target);
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    cut: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

interface Fixture {
  lines: Record<string, unknown>[];
  restUrl: string;
  connectUrl: string;
}

const infra = realInfra();
// On real PostgreSQL too when it is configured; under MESHWORK_REQUIRE_REAL_INFRA a missing server fails.
const onPostgres = realServers(test, "database faults on PostgreSQL", ["postgres"]) !== undefined;
const targets = onPostgres ? (["embedded", "postgres"] as const) : (["embedded"] as const);
const books = { name: "faults", entities: [], migrations: [{ name: "faults-0001-book", class: CreateBooks }] };

async function tempDir(t: ExecutionContext): Promise<string> {
  const dataDir = await mkdtemp(join(tmpdir(), "meshwork-faults-"));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  return dataDir;
}

async function openTarget(
  t: ExecutionContext,
  target: "embedded" | "postgres",
  relayed = false,
): Promise<{ db: Database; cut(): Promise<void> }> {
  const dataDir = await tempDir(t);
  let url: string | undefined;
  let cut = async () => {};
  if (target === "postgres") {
    const created = await createTestDatabaseUrl(infra.databaseUrl!);
    t.teardown(() => created.drop());
    url = created.url;
    if (relayed) {
      const real = new URL(created.url);
      const relay = await startRelay({ host: real.hostname, port: Number(real.port || 5432) });
      real.host = `127.0.0.1:${relay.port}`;
      url = real.toString();
      cut = relay.cut;
    }
  }
  const db = await openDatabase({ url, dataDir, poolSize: 2, modules: [books], logger: testLogger("faults") });
  t.teardown(() => db.close());
  return { db, cut };
}

/** The library test service writing through `em`, behind the error interceptor, over REST and Connect. */
async function serve(t: ExecutionContext, em: () => EntityManager): Promise<Fixture> {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const logger = createLogger({ level: "debug", destination });
  const library = definePartialService(LibraryService, {
    async createBook(req) {
      const title = req.book?.title ?? "";
      // Straight to the driver: the fault under test must reach PostgreSQL, no validation first.
      const rows = await em().execute<{ id: number }[]>('insert into "faults_book" ("title") values (?) returning "id"', [title]);
      return { name: `shelves/${req.shelfId}/books/${rows[0]!.id}`, title };
    },
    async getBook(req) {
      const rows = await em().execute<{ title: string }[]>('select "title" from "faults_book" where "id" = ?', [
        Number(req.name.split("/").pop()),
      ]);
      return { name: req.name, title: rows[0]?.title ?? "" };
    },
  });
  const routes = buildRoutes({ services: [library], interceptors: [errorInterceptor(logger)] });
  const host = await startServiceHost({ host: "127.0.0.1", port: 0, routes, logger, shutdownGraceMs: 1_000 });
  t.teardown(() => host.close());
  const front = createFront({
    name: "library",
    host: "127.0.0.1",
    port: 0,
    services: [LibraryService],
    transport: createDirectTransport(routes),
    logger,
  });
  const { port } = await front.listen();
  t.teardown(() => front.close());
  return { lines, restUrl: `http://127.0.0.1:${port}`, connectUrl: `http://127.0.0.1:${host.port}` };
}

async function assertUnavailable(t: ExecutionContext, f: Fixture, name: string) {
  const rest = await fetch(`${f.restUrl}/v1/${name}`);
  t.is(rest.status, 503);
  t.is(rest.headers.get("retry-after"), "5");
  t.is(rest.headers.get("content-type"), "application/problem+json");

  const client = createClient(LibraryService, createConnectTransport({ baseUrl: f.connectUrl, httpVersion: "2" }));
  const err = await t.throwsAsync(client.getBook({ name }));
  t.true(err instanceof ConnectError);
  t.is((err as ConnectError).code, Code.Unavailable);
  t.is((err as ConnectError).metadata.get("retry-after"), "5");

  const write = await postBook(f, "after-the-cut");
  t.is(write.status, 503);
  t.false(
    f.lines.some((l) => l.level === "error"),
    "an outage is not logged as a handler bug",
  );
  t.true(f.lines.some((l) => l.msg === "database unavailable"));
}

test("a database on a closed port: REST 503 + Retry-After, Connect Unavailable, no 500", async (t) => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const { port } = closed.address() as { port: number };
  await new Promise((resolve) => closed.close(resolve));
  const orm = await MikroORM.init({
    driver: PostgreSqlDriver,
    clientUrl: `postgres://postgres@127.0.0.1:${port}/nowhere`,
    entities: [],
    discovery: { warnWhenNoEntities: false },
    ensureDatabase: false,
    connect: false,
  });
  t.teardown(() => orm.close(true));
  const f = await serve(t, () => orm.em.fork());
  await assertUnavailable(t, f, "shelves/1/books/1");
});

function postBook(f: Fixture, title: string) {
  return fetch(`${f.restUrl}/v1/shelves/1/books`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ title }),
  });
}

for (const target of targets) {
  test(`${target}: failed writes log the SQL state and statement, never a bound value`, async (t) => {
    const { db } = await openTarget(t, target);
    const f = await serve(t, () => db.em());
    t.is((await postBook(f, "secret-title-0001")).status, 201);

    // A unique violation: PostgreSQL's detail repeats the row ("Key (title)=(...) already exists").
    const duplicate = await postBook(f, "secret-title-0001");
    t.is(duplicate.status, 409);
    t.notRegex(await duplicate.text(), /secret-title/);

    // A check violation: not a client refusal the interceptor knows, so a 500, logged as an error.
    const tooLong = await postBook(f, `secret-title-0002-${"x".repeat(40)}`);
    t.is(tooLong.status, 500);
    t.notRegex(await tooLong.text(), /secret-title|faults_book/);

    const logged = JSON.stringify(f.lines);
    t.notRegex(logged, /secret-title/, "no bound value in any log line");
    const failures = f.lines.filter((l) => l.rpc === "meshwork.testing.v1.LibraryService/CreateBook" && typeof l.err === "object");
    const states = failures.map((l) => (l.err as { sqlState?: string }).sqlState);
    t.deepEqual(states, ["23505", "23514"]);
    for (const line of failures) {
      const err = line.err as { statement?: string; constraint?: string; message?: string };
      t.is(err.statement, 'insert into "faults_book"');
      t.truthy(err.constraint);
      t.regex(err.message ?? "", /violates/);
    }
  });

  test(`${target}: a NUL sent straight to the driver is a 400, logged without the value`, async (t) => {
    const { db } = await openTarget(t, target);
    const f = await serve(t, () => db.em());
    const res = await postBook(f, "secret\u0000title");
    t.is(res.status, 400);
    const line = f.lines.find((l) => l.rpc === "meshwork.testing.v1.LibraryService/CreateBook" && typeof l.err === "object");
    t.truthy(line);
    // PostgreSQL refuses the whole message (08P01); the embedded server reports it in its own way.
    t.regex((line!.err as { sqlState?: string }).sqlState ?? "", target === "postgres" ? /^08P01$/ : /^[0-9A-Z]{5}$/);
    t.notRegex(JSON.stringify(f.lines), /secret/);
  });
}

if (onPostgres) {
  test("postgres: connections cut under a running service: REST 503 + Retry-After, Connect Unavailable", async (t) => {
    const { db, cut } = await openTarget(t, "postgres", true);
    const f = await serve(t, () => db.em());
    const created = await postBook(f, "before-the-cut");
    t.is(created.status, 201);
    const { name } = (await created.json()) as { name: string };
    await cut();
    await assertUnavailable(t, f, name);
  });
}
