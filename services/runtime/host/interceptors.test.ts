// The server interceptors on streaming calls, where the handler runs only while the adapter
// pulls messages, long after the interceptor's `await next(req)` returned.
import { Code, ConnectError, createClient, createRouterTransport, type ServiceImpl } from "@connectrpc/connect";
import test from "ava";
import { Health, HealthCheckResponse_ServingStatus } from "../../../gen/grpc/health/v1/health_pb.js";
import { errorInterceptor } from "./interceptors/error-interceptor.js";
import { forwardRequestIdInterceptor, requestContextInterceptor } from "./interceptors/request-context-interceptor.js";
import { getRequestId, requestContext } from "./request-context.js";
import { memoryLogger } from "../../../test/support/host-fixtures.js";

const tick = () => new Promise((resolve) => setImmediate(resolve));

function healthClient(impl: Partial<ServiceImpl<typeof Health>>, logger = memoryLogger()) {
  const transport = createRouterTransport((router) => {
    router.service(Health, impl, { interceptors: [requestContextInterceptor, errorInterceptor(logger)] });
  });
  return createClient(Health, transport);
}

test("a server-streaming handler runs inside the request context on every pull", async (t) => {
  const seen: (string | undefined)[] = [];
  const client = healthClient({
    async *watch() {
      seen.push(getRequestId());
      await tick();
      seen.push(getRequestId());
      yield { status: HealthCheckResponse_ServingStatus.SERVING };
      await tick();
      seen.push(getRequestId());
      yield { status: HealthCheckResponse_ServingStatus.NOT_SERVING };
    },
  });
  let echoed = null as string | null;
  const statuses: HealthCheckResponse_ServingStatus[] = [];
  for await (const { status } of client.watch(
    { service: "" },
    { headers: { "x-request-id": "stream-7" }, onHeader: (h) => (echoed = h.get("x-request-id")) },
  )) {
    statuses.push(status);
  }
  t.deepEqual(statuses, [HealthCheckResponse_ServingStatus.SERVING, HealthCheckResponse_ServingStatus.NOT_SERVING]);
  t.deepEqual(seen, ["stream-7", "stream-7", "stream-7"]);
  t.is(echoed, "stream-7");
  t.is(getRequestId(), undefined, "the context does not leak out of the call");
});

test("an error thrown mid-stream is hidden as internal error and logged", async (t) => {
  const logger = memoryLogger();
  const client = healthClient(
    {
      async *watch() {
        yield { status: HealthCheckResponse_ServingStatus.SERVING };
        throw new TypeError("cannot read properties of undefined (reading 'pool')");
      },
    },
    logger,
  );
  const statuses: HealthCheckResponse_ServingStatus[] = [];
  const err = await t.throwsAsync(async () => {
    for await (const { status } of client.watch({ service: "" }, { headers: { "x-request-id": "stream-8" } })) {
      statuses.push(status);
    }
  });
  t.deepEqual(statuses, [HealthCheckResponse_ServingStatus.SERVING]);
  t.is(ConnectError.from(err).code, Code.Internal);
  t.is(ConnectError.from(err).rawMessage, "internal error");
  const logged = logger.lines.find((line) => line.level === "error");
  t.regex((logged?.obj.err as Error | undefined)?.message ?? "", /reading 'pool'/);
  t.is(logged?.obj.rpc, "grpc.health.v1.Health/Watch");
});

test("unary: ConnectErrors pass through untouched, other errors become internal error", async (t) => {
  const logger = memoryLogger();
  const client = healthClient(
    {
      check(req) {
        if (req.service === "denied") {
          throw new ConnectError("no access to that", Code.PermissionDenied);
        }
        throw new RangeError("offset 9000 out of bounds for buffer of db row 17");
      },
    },
    logger,
  );
  const denied = ConnectError.from(await t.throwsAsync(client.check({ service: "denied" })));
  t.is(denied.code, Code.PermissionDenied);
  t.is(denied.rawMessage, "no access to that");
  t.is(logger.lines.filter((line) => line.level === "error").length, 0);

  const hidden = ConnectError.from(await t.throwsAsync(client.check({ service: "x" })));
  t.is(hidden.code, Code.Internal);
  t.is(hidden.rawMessage, "internal error");
  t.is(logger.lines.filter((line) => line.level === "error").length, 1);
});

test("forwardRequestIdInterceptor carries the current request id to the next call", async (t) => {
  const seen: (string | undefined)[] = [];
  const transport = createRouterTransport(
    (router) => {
      router.service(
        Health,
        {
          check() {
            seen.push(getRequestId());
            return { status: HealthCheckResponse_ServingStatus.SERVING };
          },
        },
        { interceptors: [requestContextInterceptor] },
      );
    },
    { transport: { interceptors: [forwardRequestIdInterceptor] } },
  );
  const client = createClient(Health, transport);
  await requestContext.run({ requestId: "from-gateway-1", values: new Map() }, () => client.check({ service: "" }));
  await client.check({ service: "" });
  t.is(seen[0], "from-gateway-1");
  t.regex(seen[1] ?? "", /^[0-9a-f-]{36}$/, "outside a request, the server makes its own");
});
