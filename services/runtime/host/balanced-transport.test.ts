// The balanced transport over real HTTP/2 service hosts on loopback, and a port that refuses
// connections (bound, then closed): calls take the addresses in turn, a refusing address is skipped
// for 5 s (on a clock the test moves) and the call goes once to the next, a failure that is the
// service's own answer is never sent twice, and with every address refusing the REST front
// answers 503 with Retry-After.
import { once } from "node:events";
import net from "node:net";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import test from "ava";
import { createFront } from "../../../gateway/index.js";
import { LibraryService } from "../../../test/gen/meshwork/testing/v1/transcoding_pb.js";
import { captureLogger } from "../../../test/support/gateway-harness.js";
import { memoryLogger } from "../../../test/support/host-fixtures.js";
import {
  buildRoutes,
  createBalancedTransport,
  createGrpcClientTransport,
  definePartialService,
  type ServiceHost,
  splitAddresses,
  startServiceHost,
} from "./index.js";

const hosts: ServiceHost[] = [];
let a: string;
let b: string;
let refusing: string;
let refusingToo: string;
/** How often the hosts' handlers saw a request, by the request's name. */
const served = new Map<string, number>();

/** A host whose answers name it; "unavailable" is its own refusal, "shelf 13" breaks mid-stream. */
async function startHost(name: string): Promise<string> {
  const library = definePartialService(LibraryService, {
    async getBook(req) {
      served.set(req.name, (served.get(req.name) ?? 0) + 1);
      if (req.name.startsWith("unavailable")) throw new ConnectError("the service's own answer", Code.Unavailable);
      return { name: req.name, title: name };
    },
    async *watchShelf(req) {
      for (let sequence = 1; sequence <= req.limit; sequence++) {
        yield { shelfId: req.shelfId, sequence, note: name };
        if (req.shelfId === 13n && sequence === 2) throw new ConnectError("shelf 13 collapsed", Code.DataLoss);
      }
    },
  });
  const host = await startServiceHost({
    host: "127.0.0.1",
    port: 0,
    routes: buildRoutes({ services: [library] }),
    logger: memoryLogger(),
    shutdownGraceMs: 500,
  });
  hosts.push(host);
  return `http://127.0.0.1:${host.port}`;
}

/** A loopback port nothing listens on: bound, then closed (connections to it are refused). */
async function refusingAddress(): Promise<string> {
  const server = net.createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as net.AddressInfo;
  server.close();
  await once(server, "close");
  return `http://127.0.0.1:${port}`;
}

test.before(async () => {
  a = await startHost("a");
  b = await startHost("b");
  refusing = await refusingAddress();
  refusingToo = await refusingAddress();
});

test.after.always(async () => {
  for (const host of hosts) await host.close();
});

/** A balanced transport over `addresses` that records which address each attempt went to. */
function balanced(addresses: readonly string[], clock = { now: 0 }) {
  const attempts: string[] = [];
  const skipped: string[] = [];
  const transport = createBalancedTransport({
    addresses,
    now: () => clock.now,
    onSkip: (address) => skipped.push(address),
    transportFor(address) {
      const inner = createGrpcClientTransport({ baseUrl: address });
      const counted: Transport = {
        unary(...args) {
          attempts.push(address);
          return inner.unary(...args);
        },
        stream(...args) {
          attempts.push(address);
          return inner.stream(...args);
        },
      };
      return counted;
    },
  });
  return { client: createClient(LibraryService, transport), transport, attempts, skipped, clock };
}

test("the setting's list: addresses split on commas, blanks around them dropped", (t) => {
  t.deepEqual(splitAddresses("http://a:1, http://b:2 ,http://c:3"), ["http://a:1", "http://b:2", "http://c:3"]);
  t.deepEqual(splitAddresses("http://a:1"), ["http://a:1"]);
});

test("calls go to the addresses in turn (round-robin)", async (t) => {
  const { client, attempts } = balanced([a, b]);
  const titles: string[] = [];
  for (let i = 0; i < 6; i++) titles.push((await client.getBook({ name: `rr-${i}` })).title);
  t.deepEqual(titles, ["a", "b", "a", "b", "a", "b"]);
  t.deepEqual(attempts, [a, b, a, b, a, b]);
});

test("a refusing address: the call goes once more, to the next; the address is skipped for 5 s, then tried again", async (t) => {
  const { client, attempts, skipped, clock } = balanced([a, refusing, b]);
  t.is((await client.getBook({ name: "1" })).title, "a");
  // Its turn: refused, and the same call answered by the next address.
  t.is((await client.getBook({ name: "2" })).title, "b");
  t.deepEqual(attempts, [a, refusing, b]);
  t.deepEqual(skipped, [refusing]);

  // For 5 s the rotation leaves it out.
  attempts.length = 0;
  const titles: string[] = [];
  for (let i = 0; i < 4; i++) titles.push((await client.getBook({ name: `skip-${i}` })).title);
  t.deepEqual(titles, ["a", "b", "a", "b"]);
  clock.now += 4_999;
  titles.push((await client.getBook({ name: "almost" })).title);
  t.deepEqual(titles, ["a", "b", "a", "b", "a"]);
  t.false(attempts.includes(refusing), "not tried while skipped");

  // After 5 s it has its turn again (and, still refusing, hands the call on once more).
  clock.now += 1;
  attempts.length = 0;
  t.is((await client.getBook({ name: "after" })).title, "b");
  t.deepEqual(attempts, [refusing, b]);
  t.deepEqual(skipped, [refusing, refusing]);
});

test("every address refusing: Unavailable after one retry, and the next call still tries them", async (t) => {
  const { client, attempts } = balanced([refusing, refusingToo]);
  const error = await t.throwsAsync(client.getBook({ name: "x" }), { instanceOf: ConnectError });
  t.is(error.code, Code.Unavailable);
  t.deepEqual(attempts, [refusing, refusingToo], "one retry, on the next address");
  // Both skipped: the rotation tries them anyway rather than refusing without a try.
  await t.throwsAsync(client.getBook({ name: "y" }), { instanceOf: ConnectError });
  t.is(attempts.length, 4);
});

test("the service's own Unavailable is its answer: not sent again, the address not skipped", async (t) => {
  const { client, attempts, skipped } = balanced([a, b]);
  const error = await t.throwsAsync(client.getBook({ name: "unavailable-once" }), { instanceOf: ConnectError });
  t.is(error.code, Code.Unavailable);
  t.is(error.rawMessage, "the service's own answer");
  t.deepEqual(attempts, [a]);
  t.deepEqual(skipped, []);
  t.is(served.get("unavailable-once"), 1, "the service saw the call once");
  t.is((await client.getBook({ name: "next" })).title, "b", "the rotation goes on");
});

test("server streams: an address per call, a refused one retried on the next before the stream starts", async (t) => {
  const { client, attempts } = balanced([refusing, a, b]);
  const first: string[] = [];
  for await (const event of client.watchShelf({ shelfId: 1n, limit: 2 })) first.push(`${event.note}:${event.sequence}`);
  t.deepEqual(first, ["a:1", "a:2"]);
  t.deepEqual(attempts, [refusing, a]);
  const second: string[] = [];
  for await (const event of client.watchShelf({ shelfId: 2n, limit: 1 })) second.push(`${event.note}:${event.sequence}`);
  t.deepEqual(second, ["b:1"], "the next stream goes to the next address");
});

test("a stream that fails after it started is not sent again", async (t) => {
  const { client, attempts } = balanced([a, b]);
  const seen: number[] = [];
  const error = await t.throwsAsync(
    (async () => {
      for await (const event of client.watchShelf({ shelfId: 13n, limit: 5 })) seen.push(event.sequence);
    })(),
    { instanceOf: ConnectError },
  );
  t.is(error.code, Code.DataLoss);
  t.deepEqual(seen, [1, 2]);
  t.deepEqual(attempts, [a]);
});

test("through the REST front: a refused address is invisible; every address refusing is 503 with Retry-After", async (t) => {
  async function front(transport: Transport) {
    const created = createFront({
      name: "lib",
      host: "127.0.0.1",
      port: 0,
      services: [LibraryService],
      transport,
      logger: captureLogger([]),
      unavailableRetryAfterSeconds: 4,
    });
    const { port } = await created.listen();
    t.teardown(() => created.close());
    return `http://127.0.0.1:${port}`;
  }
  const healthy = await front(balanced([refusing, a]).transport);
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${healthy}/v1/books/front-${i}`);
    t.is(res.status, 200);
    t.is(((await res.json()) as { title: string }).title, "a");
  }
  const down = await front(balanced([refusing, refusingToo]).transport);
  const res = await fetch(`${down}/v1/books/x`);
  t.is(res.status, 503);
  t.is(res.headers.get("retry-after"), "4");
});
