// `npm run bench:h2-floor`: what one gRPC-shaped unary round trip costs Node's HTTP/2 alone, with
// no mesh code: a bare server answering headers, one small framed message and trailers, and a
// bare client with 16 calls in flight (as `npm run bench` uses). Server and client CPU per call
// are the floor under every HTTP/2 hop of the mesh (the service host, the distributed gateway's
// client), to read the (d) and (f) rows of `npm run bench` against. A benchmark, not a test.
import { fork } from "node:child_process";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { machine } from "./ingest-machine.js";

const IN_FLIGHT = 16;
const WARMUP_MS = 2_000;
const MEASURE_MS = 10_000;

const frame = (size: number, fill: number) => Buffer.concat([Buffer.from([0, 0, 0, 0, size]), Buffer.alloc(size, fill)]);

function serve(): void {
  const answer = frame(60, 1); // about the size of a GetAsset answer
  const server = http2.createServer();
  server.on("stream", (stream) => {
    stream.on("data", () => undefined);
    stream.on("end", () => {
      stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end(answer);
    });
  });
  server.listen(0, "127.0.0.1", () => process.send?.({ port: (server.address() as AddressInfo).port }));
  process.on("message", () => process.send?.({ cpu: process.cpuUsage() }));
}

async function measure(): Promise<void> {
  const child = fork(fileURLToPath(import.meta.url), ["serve"], { execArgv: ["--import", "tsx"] });
  const next = () => new Promise<{ port?: number; cpu?: NodeJS.CpuUsage }>((resolve) => child.once("message", resolve as never));
  const { port } = await next();
  const session = http2.connect(`http://127.0.0.1:${port}`);
  const request = frame(40, 2);
  const call = () =>
    new Promise<void>((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": "/bench.v1.Floor/Call",
        "content-type": "application/grpc",
        te: "trailers",
      });
      stream.on("data", () => undefined);
      stream.on("error", reject);
      stream.on("close", resolve);
      stream.end(request);
    });
  const run = async (ms: number) => {
    let calls = 0;
    const end = Date.now() + ms;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (Date.now() < end) {
          await call();
          calls++;
        }
      }),
    );
    return calls;
  };
  const serverCpu = async () => {
    child.send("cpu");
    return (await next()).cpu!;
  };
  await run(WARMUP_MS);
  const serverBefore = await serverCpu();
  const clientBefore = process.cpuUsage();
  const started = Date.now();
  const calls = await run(MEASURE_MS);
  const elapsedMs = Date.now() - started;
  const serverAfter = await serverCpu();
  const client = process.cpuUsage(clientBefore);
  const perCall = (usage: NodeJS.CpuUsage) => ((usage.user + usage.system) / calls).toFixed(1);
  const m = machine();
  console.log(
    `machine: ${m.cpu}, ${m.cores} cores; Node ${m.node}; load average before ${m.loadAverage.map((l) => l.toFixed(2)).join(" ")}`,
  );
  console.log(
    `bare HTTP/2 unary round trips, ${IN_FLIGHT} in flight, ${MEASURE_MS / 1000} s: ${Math.round((calls / elapsedMs) * 1000)} calls/s`,
  );
  console.log(
    `CPU per call: server ${perCall({ user: serverAfter.user - serverBefore.user, system: serverAfter.system - serverBefore.system })} µs, client ${perCall(client)} µs`,
  );
  session.close();
  child.kill();
}

if (process.argv[2] === "serve") serve();
else await measure();
