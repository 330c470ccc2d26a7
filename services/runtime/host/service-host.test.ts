// The host end to end over the network, with clients written by others: grpc-js (loading the
// .proto files, not our generated code) and connect-node's Connect and gRPC-web transports.
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import test from "ava";
import { Health, HealthCheckResponse_ServingStatus } from "../../../gen/grpc/health/v1/health_pb.js";
import { AssetService } from "../../../gen/tracking/v1/asset_pb.js";
import { buildRoutes } from "./build-routes.js";
import { errorInterceptor } from "./interceptors/error-interceptor.js";
import { requestContextInterceptor } from "./interceptors/request-context-interceptor.js";
import { startServiceHost } from "./service-host.js";
import { definePartialService } from "./service-registration.js";
import {
  FAILING_ASSET_ID,
  KNOWN_ASSET_ID,
  memoryLogger,
  SECRET_DETAIL,
  startFixture,
  type Fixture,
} from "../../../test/support/host-fixtures.js";
import { loadGrpcPackage, unaryCall as unary } from "../../../test/support/grpc-js.js";

const loadProto = (file: string) => loadGrpcPackage(file, { longs: String, enums: String, defaults: true });

const standardInterceptors = (logger: Parameters<typeof errorInterceptor>[0]) => [requestContextInterceptor, errorInterceptor(logger)];

async function withFixture(t: { teardown(fn: () => Promise<void>): void }): Promise<Fixture> {
  const fixture = await startFixture(standardInterceptors);
  t.teardown(() => fixture.host.close());
  return fixture;
}

test("gRPC: grpc-js, loading the .proto files, calls GetAsset", async (t) => {
  const { host } = await withFixture(t);
  const tracking = loadProto("tracking/v1/asset.proto");
  const client = new tracking.tracking.v1.AssetService(`127.0.0.1:${host.port}`, grpc.credentials.createInsecure());
  t.teardown(() => client.close());

  const asset = await unary<{ id: string; name: string; speedThresholdKmh: number; createdAt: { seconds: string } }>(client, "GetAsset", {
    id: KNOWN_ASSET_ID,
  });
  t.is(asset.id, KNOWN_ASSET_ID);
  t.is(asset.name, "Van 7");
  t.is(asset.speedThresholdKmh, 90);
  t.is(asset.createdAt.seconds, String(Date.parse("2024-05-01T10:00:00Z") / 1000));
});

test("gRPC: a ConnectError keeps its code; a bare Error becomes INTERNAL without its details, and is logged", async (t) => {
  const { host, logger } = await withFixture(t);
  const tracking = loadProto("tracking/v1/asset.proto");
  const client = new tracking.tracking.v1.AssetService(`127.0.0.1:${host.port}`, grpc.credentials.createInsecure());
  t.teardown(() => client.close());

  const notFound = await t.throwsAsync<grpc.ServiceError>(unary(client, "GetAsset", { id: "nope" }));
  t.is(notFound?.code, grpc.status.NOT_FOUND);
  t.is(notFound?.details, "asset nope not found");

  const metadata = new grpc.Metadata();
  metadata.set("x-request-id", "req-boom-1");
  const internal = await t.throwsAsync<grpc.ServiceError>(unary(client, "GetAsset", { id: FAILING_ASSET_ID }, metadata));
  t.is(internal?.code, grpc.status.INTERNAL);
  t.is(internal?.details, "internal error");
  t.false(JSON.stringify(internal?.metadata.getMap()).includes("hunter2"));
  t.deepEqual(internal?.metadata.get("x-request-id"), ["req-boom-1"]);

  const logged = logger.lines.find((line) => line.level === "error");
  t.truthy(logged, "the original error is logged");
  t.is((logged?.obj.err as Error | undefined)?.message, SECRET_DETAIL);
  t.is(logged?.obj.rpc, "tracking.v1.AssetService/GetAsset");
});

test("Connect protocol over h2c: the handler sees the caller's x-request-id, the response echoes it", async (t) => {
  const { url, seenRequestIds } = await withFixture(t);
  const client = createClient(AssetService, createConnectTransport({ baseUrl: url, httpVersion: "2" }));

  let echoed = null as string | null;
  const asset = await client.getAsset(
    { id: KNOWN_ASSET_ID },
    { headers: { "x-request-id": "req-connect-42" }, onHeader: (header) => (echoed = header.get("x-request-id")) },
  );
  t.is(asset.name, "Van 7");
  t.is(echoed, "req-connect-42");
  // Seen on entry and again after an await inside the handler.
  t.deepEqual(seenRequestIds, ["req-connect-42", "req-connect-42"]);

  const err = await t.throwsAsync(client.getAsset({ id: "nope" }, { headers: { "x-request-id": "req-connect-43" } }));
  t.is(ConnectError.from(err).code, Code.NotFound);
  t.is(ConnectError.from(err).metadata.get("x-request-id"), "req-connect-43");
});

test("a missing or unusable x-request-id is replaced by a fresh one", async (t) => {
  const { url, seenRequestIds } = await withFixture(t);
  const client = createClient(AssetService, createConnectTransport({ baseUrl: url, httpVersion: "2" }));

  const echoed: (string | null)[] = [];
  await client.getAsset({ id: KNOWN_ASSET_ID }, { onHeader: (h) => echoed.push(h.get("x-request-id")) });
  await client.getAsset(
    { id: KNOWN_ASSET_ID },
    { headers: { "x-request-id": "has spaces\tand tabs" }, onHeader: (h) => echoed.push(h.get("x-request-id")) },
  );
  t.is(echoed.length, 2);
  for (const id of echoed) {
    t.regex(id ?? "", /^[0-9a-f-]{36}$/);
  }
  t.not(echoed[0], echoed[1]);
  t.deepEqual(seenRequestIds, [echoed[0], echoed[0], echoed[1], echoed[1]]);
});

test("gRPC-web over h2c calls GetAsset", async (t) => {
  const { url } = await withFixture(t);
  const client = createClient(AssetService, createGrpcWebTransport({ baseUrl: url, httpVersion: "2" }));
  const asset = await client.getAsset({ id: KNOWN_ASSET_ID });
  t.is(asset.name, "Van 7");
  const err = await t.throwsAsync(client.getAsset({ id: FAILING_ASSET_ID }));
  t.is(ConnectError.from(err).code, Code.Internal);
  t.is(ConnectError.from(err).rawMessage, "internal error");
});

test("the same routes serve in-process through createRouterTransport", async (t) => {
  const { routes, seenRequestIds } = await withFixture(t);
  const transport = createRouterTransport(routes);
  const assets = createClient(AssetService, transport);
  const asset = await assets.getAsset({ id: KNOWN_ASSET_ID }, { headers: { "x-request-id": "in-process-1" } });
  t.is(asset.name, "Van 7");
  t.deepEqual(seenRequestIds, ["in-process-1", "in-process-1"]);

  const health = createClient(Health, transport);
  const { status } = await health.check({ service: "tracking.v1.AssetService" });
  t.is(status, HealthCheckResponse_ServingStatus.SERVING);
});

test("health via grpc-js: Check, unknown service, flipping a status, Watch", async (t) => {
  const { host } = await withFixture(t);
  const proto = loadProto("grpc/health/v1/health.proto");
  const client = new proto.grpc.health.v1.Health(`127.0.0.1:${host.port}`, grpc.credentials.createInsecure());
  t.teardown(() => client.close());

  t.is((await unary<{ status: string }>(client, "Check", { service: "" })).status, "SERVING");
  t.is((await unary<{ status: string }>(client, "Check", { service: "tracking.v1.AssetService" })).status, "SERVING");
  const unknown = await t.throwsAsync<grpc.ServiceError>(unary(client, "Check", { service: "nope.v1.Nothing" }));
  t.is(unknown?.code, grpc.status.NOT_FOUND);

  const watch: grpc.ClientReadableStream<{ status: string }> = client.Watch({ service: "tracking.v1.AssetService" });
  const seen: string[] = [];
  const firstTwo = new Promise<void>((resolve, reject) => {
    watch.on("data", (msg: { status: string }) => {
      seen.push(msg.status);
      if (seen.length === 1) {
        host.health.setStatus("tracking.v1.AssetService", "NOT_SERVING");
      }
      if (seen.length === 2) {
        resolve();
      }
    });
    watch.on("error", reject);
  });
  await firstTwo;
  watch.cancel();
  t.deepEqual(seen, ["SERVING", "NOT_SERVING"]);
  t.is((await unary<{ status: string }>(client, "Check", { service: "tracking.v1.AssetService" })).status, "NOT_SERVING");
  t.is((await unary<{ status: string }>(client, "Check", { service: "" })).status, "SERVING");

  const unknownWatch: grpc.ClientReadableStream<{ status: string }> = client.Watch({ service: "nope.v1.Nothing" });
  const first = await new Promise<string>((resolve, reject) => {
    unknownWatch.once("data", (msg: { status: string }) => resolve(msg.status));
    unknownWatch.on("error", reject);
  });
  unknownWatch.cancel();
  t.is(first, "SERVICE_UNKNOWN");
});

test("health List answers every entry", async (t) => {
  const { url, host } = await withFixture(t);
  host.health.setStatus("", "NOT_SERVING");
  const client = createClient(Health, createConnectTransport({ baseUrl: url, httpVersion: "2" }));
  const { statuses } = await client.list({});
  t.deepEqual(Object.fromEntries(Object.entries(statuses).map(([name, response]) => [name, response.status])), {
    "": HealthCheckResponse_ServingStatus.NOT_SERVING,
    "tracking.v1.AssetService": HealthCheckResponse_ServingStatus.SERVING,
  });
});

test("close(): a Watch sees NOT_SERVING and ends, then the port refuses calls", async (t) => {
  const fixture = await startFixture(standardInterceptors);
  const client = createClient(Health, createConnectTransport({ baseUrl: fixture.url, httpVersion: "2" }));
  const watched: HealthCheckResponse_ServingStatus[] = [];
  const watching = (async () => {
    for await (const { status } of client.watch({ service: "" })) {
      watched.push(status);
      if (watched.length === 1) {
        void fixture.host.close();
      }
    }
  })();
  await watching;
  await fixture.host.close();
  t.deepEqual(watched, [HealthCheckResponse_ServingStatus.SERVING, HealthCheckResponse_ServingStatus.NOT_SERVING]);
  t.true(fixture.host.health.isShutdown);

  const fresh = createClient(AssetService, createConnectTransport({ baseUrl: fixture.url, httpVersion: "2" }));
  const err = await t.throwsAsync(fresh.getAsset({ id: KNOWN_ASSET_ID }));
  t.is(ConnectError.from(err).code, Code.Unavailable);
});

test("close() lets a running call finish, and cancels one that outlives the grace period", async (t) => {
  const entered = new Map<string, () => void>();
  const handlerEntered = (id: string) => new Promise<void>((resolve) => entered.set(id, resolve));
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const routes = buildRoutes({
    services: [
      definePartialService(AssetService, {
        async getAsset(req, ctx) {
          entered.get(req.id)?.();
          if (req.id === "finishes") {
            await released;
            return { id: req.id, name: "Late but fine" };
          }
          // Ignores everything but its signal, as a stuck call would.
          await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
          throw ConnectError.from(ctx.signal.reason);
        },
      }),
    ],
  });

  const patient = await startServiceHost({ host: "127.0.0.1", port: 0, routes, logger: memoryLogger() });
  const patientClient = createClient(
    AssetService,
    createConnectTransport({ baseUrl: `http://127.0.0.1:${patient.port}`, httpVersion: "2" }),
  );
  const finishesEntered = handlerEntered("finishes");
  const inFlight = patientClient.getAsset({ id: "finishes" });
  await finishesEntered;
  const closing = patient.close();
  release();
  t.is((await inFlight).name, "Late but fine");
  await closing;

  const logger = memoryLogger();
  const strict = await startServiceHost({ host: "127.0.0.1", port: 0, routes, logger, shutdownGraceMs: 50 });
  const strictClient = createClient(AssetService, createConnectTransport({ baseUrl: `http://127.0.0.1:${strict.port}`, httpVersion: "2" }));
  const stuckEntered = handlerEntered("stuck");
  const stuck = strictClient.getAsset({ id: "stuck" });
  await stuckEntered;
  await strict.close();
  const err = ConnectError.from(await t.throwsAsync(stuck));
  t.is(err.code, Code.Unavailable);
  t.true(logger.lines.some((line) => line.level === "warn" && /grace period/.test(line.msg ?? "")));
});

test("startServiceHost rejects when the port is taken", async (t) => {
  const { host, routes } = await withFixture(t);
  const err = await t.throwsAsync(startServiceHost({ host: "127.0.0.1", port: host.port, routes, logger: memoryLogger() }));
  t.is((err as NodeJS.ErrnoException).code, "EADDRINUSE");
});
