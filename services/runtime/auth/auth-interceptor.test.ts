// The auth interceptor against the real tracking contracts (their policies come from the protos)
// and a contract built here for what tracking does not use yet (bearer policies, a bad role).
import { create, createFileRegistry, setExtension, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, MethodOptionsSchema, file_google_protobuf_empty } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, createRouterTransport, type Interceptor } from "@connectrpc/connect";
import test from "ava";
import { ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { Health, HealthCheckResponse_ServingStatus } from "../../../gen/grpc/health/v1/health_pb.js";
import { AuthKind, AuthPolicySchema, auth } from "../../../gen/meshwork/api/v1/options_pb.js";
import { DeviceService } from "../../../gen/tracking/v1/device_pb.js";
import { ObservationService } from "../../../gen/tracking/v1/observation_pb.js";
import { SystemService } from "../../../gen/tracking/v1/system_pb.js";
import { createApiKeyStore } from "./api-key-store.js";
import { authInterceptor, type BearerVerifier, type CredentialSchemes } from "./auth-interceptor.js";
import { requestContext } from "../host/request-context.js";
import { requestContextInterceptor } from "../host/interceptors/request-context-interceptor.js";
import { callerContext, callerKey, callerSlot, currentCaller, currentIdentity, type Identity } from "./identity.js";

const OPS_KEY = "ops-key-0123456789abcdef";
const INGEST_KEY = "ingest-key-0123456789abcdef";
const UNKNOWN_KEY = "nobody-knows-this-key-000";
const keys = [
  { name: "ops", role: "operator", key: OPS_KEY },
  { name: "feed", role: "ingest", key: INGEST_KEY },
] as const;

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** Tracking services with fakes that report the identity they ran under. */
function trackingClients(interceptor: Interceptor) {
  const seen: { where: string; identity: Identity; fromValues: Identity }[] = [];
  const transport = createRouterTransport((router) => {
    const options = { interceptors: [interceptor] };
    router.service(
      DeviceService,
      {
        listDevices(_req, ctx) {
          seen.push({ where: "listDevices", identity: currentIdentity(), fromValues: ctx.values.get(callerKey).identity });
          return { items: [] };
        },
      },
      options,
    );
    router.service(
      ObservationService,
      {
        ingestObservation() {
          return { id: "obs-1" };
        },
        async streamIngestObservations(requests) {
          let accepted = 0;
          for await (const _ of requests) {
            await tick();
            seen.push({ where: "streamIngest", identity: currentIdentity(), fromValues: currentIdentity() });
            accepted++;
          }
          return { accepted };
        },
      },
      options,
    );
    router.service(
      SystemService,
      {
        getHealth() {
          const caller = currentCaller();
          seen.push({ where: "getHealth", identity: caller.identity, fromValues: caller.identity });
          return { status: caller.rejectedCredential ? "Healthy (rejected credential ignored)" : "Healthy" };
        },
      },
      options,
    );
    router.service(
      Health,
      {
        async *watch() {
          for (let i = 0; i < 2; i++) {
            await tick();
            seen.push({ where: "watch", identity: currentIdentity(), fromValues: currentIdentity() });
            yield { status: HealthCheckResponse_ServingStatus.SERVING };
          }
        },
      },
      options,
    );
  });
  return {
    seen,
    devices: createClient(DeviceService, transport),
    observations: createClient(ObservationService, transport),
    system: createClient(SystemService, transport),
    health: createClient(Health, transport),
  };
}

const withKey = (key: string) => ({ headers: { "x-api-key": key } });

async function codeOf(call: Promise<unknown>): Promise<{ code: Code; message: string }> {
  try {
    await call;
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: e.code, message: e.rawMessage };
  }
  throw new Error("the call succeeded");
}

const roles = ["ingest", "operator"];
const trackingServices = [DeviceService, ObservationService, SystemService, Health];
/** One module's credentials on every given service, as the mesh wires them. */
const guarding = (credentials: CredentialSchemes, services: readonly DescService[] = trackingServices) =>
  authInterceptor({ services: services.map((service) => ({ service, credentials })) });
const withKeys = (list: readonly { name: string; role: string; key: string }[]): CredentialSchemes => ({
  apiKeys: { store: createApiKeyStore(list), roles },
});

const keyed = () => trackingClients(guarding(withKeys(keys)));

test("no key or an unknown key on an operator rpc: Unauthenticated, and the key is not echoed", async (t) => {
  const { devices, seen } = keyed();
  const missing = await codeOf(devices.listDevices({}));
  t.is(missing.code, Code.Unauthenticated);
  t.regex(missing.message, /X-Api-Key/);
  const unknown = await codeOf(devices.listDevices({}, withKey(UNKNOWN_KEY)));
  t.is(unknown.code, Code.Unauthenticated);
  t.false(unknown.message.includes(UNKNOWN_KEY));
  const empty = await codeOf(devices.listDevices({}, withKey("   ")));
  t.is(empty.code, Code.Unauthenticated);
  t.is(seen.length, 0, "the handler never ran");
});

test("an ingest key on an operator rpc: PermissionDenied naming the roles", async (t) => {
  const { devices } = keyed();
  const denied = await codeOf(devices.listDevices({}, withKey(INGEST_KEY)));
  t.is(denied.code, Code.PermissionDenied);
  t.regex(denied.message, /"feed" has the role ingest; this operation needs operator/);
  t.false(denied.message.includes(INGEST_KEY));
});

test("the operator key passes, and the handler sees who called (ALS and ctx.values)", async (t) => {
  const { devices, seen } = keyed();
  await devices.listDevices({}, withKey(OPS_KEY));
  const expected = { authenticated: true, name: "ops", role: "operator", scheme: "api-key" };
  t.deepEqual(seen, [{ where: "listDevices", identity: expected, fromValues: expected }]);
  t.false(currentIdentity().authenticated, "nothing leaks out of the call");
});

test("ingest rpcs take an ingest key and an operator key (roles are ranked)", async (t) => {
  const { observations } = keyed();
  t.is((await observations.ingestObservation({}, withKey(INGEST_KEY))).id, "obs-1");
  t.is((await observations.ingestObservation({}, withKey(OPS_KEY))).id, "obs-1");
  t.is((await codeOf(observations.ingestObservation({}))).code, Code.Unauthenticated);
});

test("a client-streaming handler keeps the identity across every message", async (t) => {
  const { observations, seen } = keyed();
  async function* inputs() {
    yield {};
    await tick();
    yield {};
  }
  const res = await observations.streamIngestObservations(inputs(), withKey(INGEST_KEY));
  t.is(res.accepted, 2);
  t.deepEqual(
    seen.map((s) => [s.where, s.identity.name]),
    [
      ["streamIngest", "feed"],
      ["streamIngest", "feed"],
    ],
  );
});

test("an open rpc needs no key, ignores a wrong one, and still knows a right one", async (t) => {
  const { system, seen } = keyed();
  t.is((await system.getHealth({})).status, "Healthy");
  t.is((await system.getHealth({}, withKey(UNKNOWN_KEY))).status, "Healthy (rejected credential ignored)");
  await system.getHealth({}, withKey(INGEST_KEY));
  t.deepEqual(
    seen.map((s) => s.identity),
    [{ authenticated: false }, { authenticated: false }, { authenticated: true, name: "feed", role: "ingest", scheme: "api-key" }],
  );
});

test("a server-streaming handler runs under the caller's identity on every pull", async (t) => {
  const { health, seen } = keyed();
  let count = 0;
  for await (const _ of health.watch({}, withKey(OPS_KEY))) count++;
  t.is(count, 2);
  t.deepEqual(
    seen.map((s) => s.identity.name),
    ["ops", "ops"],
  );
});

test("no key configured: open, every caller anonymous, an outer identity does not leak in", async (t) => {
  const { devices, observations, seen } = trackingClients(guarding(withKeys([])));
  const outer = { identity: { authenticated: true, name: "outer", role: "operator" } };
  await callerContext.run(outer, () => devices.listDevices({}));
  await devices.listDevices({}, withKey(UNKNOWN_KEY));
  t.is((await observations.ingestObservation({})).id, "obs-1");
  t.deepEqual(
    seen.map((s) => [s.identity, s.fromValues]),
    [
      [{ authenticated: false }, { authenticated: false }],
      [{ authenticated: false }, { authenticated: false }],
    ],
  );
});

test("behind the request-context interceptor (as every host runs it) the caller rides on the request's context, unary and streaming", async (t) => {
  const auth = guarding(withKeys(keys));
  const slots: boolean[] = [];
  const probe: Interceptor = (next) => async (req) => {
    slots.push(requestContext.getStore()?.values.has(callerSlot) ?? false);
    return await next(req);
  };
  const { devices, health, seen } = trackingClients((next) => requestContextInterceptor(auth(probe(next))));
  await devices.listDevices({}, withKey(OPS_KEY));
  await devices.listDevices({}, withKey(INGEST_KEY)).catch(() => undefined);
  for await (const _ of health.watch({}, withKey(OPS_KEY)));
  t.deepEqual(
    seen.map((s) => [s.where, s.identity.name, s.fromValues.name]),
    [
      ["listDevices", "ops", "ops"],
      ["watch", "ops", "ops"],
      ["watch", "ops", "ops"],
    ],
  );
  t.deepEqual(slots, [true, true], "the caller was put on the request context, not in a store of its own");
  // An outer identity set the other way (another call's store) never shadows the call's own caller.
  const outer = { identity: { authenticated: true, name: "outer", role: "operator" } };
  await callerContext.run(outer, () => devices.listDevices({}, withKey(OPS_KEY)));
  t.is(seen.at(-1)?.identity.name, "ops");
  t.false(currentIdentity().authenticated, "nothing leaks out of the calls");
});

/** A one-method contract with the given policy on its method, built as protoc would. */
function serviceWithPolicy(kind: AuthKind, role: string): DescService {
  const options = create(MethodOptionsSchema);
  setExtension(options, auth, create(AuthPolicySchema, { kind, role }));
  const file = create(FileDescriptorProtoSchema, {
    name: `test/auth_${kind}_${role}.proto`,
    package: "test.v1",
    syntax: "proto3",
    dependency: ["google/protobuf/empty.proto"],
    service: [
      {
        name: "Probe",
        method: [{ name: "Ping", inputType: ".google.protobuf.Empty", outputType: ".google.protobuf.Empty", options }],
      },
    ],
  });
  const registry = createFileRegistry(file, (name) => (name === "google/protobuf/empty.proto" ? file_google_protobuf_empty : undefined));
  return registry.getService("test.v1.Probe")!;
}

function probeClient(service: DescService, interceptor: Interceptor) {
  const seen: Identity[] = [];
  const transport = createRouterTransport((router) => {
    router.service(
      service,
      {
        ping: () => {
          seen.push(currentIdentity());
          return {};
        },
      } as never,
      { interceptors: [interceptor] },
    );
  });
  const client = createClient(service, transport) as unknown as { ping(req: object, opts?: object): Promise<unknown> };
  return { seen, ping: (headers: Record<string, string> = {}) => client.ping({}, { headers }) };
}

test("a policy naming a role the ranking does not know fails when the interceptor is built", (t) => {
  const service = serviceWithPolicy(AuthKind.API_KEY, "admin");
  const error = t.throws(() => guarding(withKeys(keys), [service]));
  t.regex(error!.message, /test\.v1\.Probe\/Ping: auth role "admin" is not one of ingest, operator/);
  t.notThrows(() => guarding(withKeys(keys)));
});

test("each service is checked against its own module's credentials", async (t) => {
  const service = serviceWithPolicy(AuthKind.API_KEY, "admin");
  const other = {
    apiKeys: { store: createApiKeyStore([{ name: "root", role: "admin", key: "root-key-0123456789abcdef" }]), roles: ["user", "admin"] },
  };
  const interceptor = authInterceptor({
    services: [{ service, credentials: other }, ...trackingServices.map((s) => ({ service: s, credentials: withKeys(keys) }))],
  });
  const probe = probeClient(service, interceptor);
  t.is((await codeOf(probe.ping({ "x-api-key": OPS_KEY }))).code, Code.Unauthenticated, "another module's key is unknown here");
  await probe.ping({ "x-api-key": "root-key-0123456789abcdef" });
  t.deepEqual(probe.seen, [{ authenticated: true, name: "root", role: "admin", scheme: "api-key" }]);
  const { devices } = trackingClients(interceptor);
  t.is((await codeOf(devices.listDevices({}, withKey("root-key-0123456789abcdef")))).code, Code.Unauthenticated);
});

test("a service no module declared is refused", async (t) => {
  const probe = probeClient(serviceWithPolicy(AuthKind.NONE, ""), guarding(withKeys([])));
  t.is((await codeOf(probe.ping())).code, Code.Unimplemented);
});

test("bearer policies without a verifier: Unimplemented while keys are configured, open otherwise", async (t) => {
  const service = serviceWithPolicy(AuthKind.BEARER, "");
  const keyedProbe = probeClient(service, guarding(withKeys(keys), [service]));
  t.is((await codeOf(keyedProbe.ping({ authorization: "Bearer abc" }))).code, Code.Unimplemented);
  t.is((await codeOf(keyedProbe.ping({ "x-api-key": OPS_KEY }))).code, Code.Unimplemented, "an API key is no bearer token");
  const openProbe = probeClient(service, guarding(withKeys([]), [service]));
  await openProbe.ping();
  t.deepEqual(openProbe.seen, [{ authenticated: false }]);
});

test("a module can plug in a bearer verifier with its own roles", async (t) => {
  const verifier: BearerVerifier = {
    roles: ["viewer", "admin"],
    verify: async (token) =>
      token === "good-admin"
        ? { authenticated: true, name: "alice", role: "admin", scheme: "bearer" }
        : token === "good-viewer"
          ? { authenticated: true, name: "bob", role: "viewer", scheme: "bearer" }
          : undefined,
  };
  const service = serviceWithPolicy(AuthKind.BEARER, "admin");
  const probe = probeClient(service, guarding({ bearer: verifier }, [service]));
  t.is((await codeOf(probe.ping())).code, Code.Unauthenticated);
  const bad = await codeOf(probe.ping({ authorization: "Bearer forged-token" }));
  t.is(bad.code, Code.Unauthenticated);
  t.false(bad.message.includes("forged-token"));
  t.is((await codeOf(probe.ping({ authorization: "Bearer good-viewer" }))).code, Code.PermissionDenied);
  await probe.ping({ authorization: "Bearer good-admin" });
  t.deepEqual(probe.seen, [{ authenticated: true, name: "alice", role: "admin", scheme: "bearer" }]);
});

test("a bearer 401 says which credential to send, with the codes the verifier names", async (t) => {
  const refusalOf = async (call: Promise<unknown>) => {
    try {
      await call;
    } catch (err) {
      return ConnectError.from(err);
    }
    throw new Error("the call succeeded");
  };
  const service = serviceWithPolicy(AuthKind.BEARER, "");
  const verify = () => undefined;
  const named = probeClient(
    service,
    guarding({ bearer: { roles: ["user"], reasons: { missing: "NO_TOKEN", invalid: "BAD_TOKEN" }, verify } }, [service]),
  );
  const missing = await refusalOf(named.ping());
  t.is(missing.code, Code.Unauthenticated);
  t.is(missing.metadata.get("www-authenticate"), "Bearer");
  t.deepEqual(
    missing.findDetails(ErrorInfoSchema).map((info) => info.reason),
    ["NO_TOKEN"],
  );
  const invalid = await refusalOf(named.ping({ authorization: "Bearer nope" }));
  t.is(invalid.metadata.get("www-authenticate"), 'Bearer error="invalid_token"');
  t.deepEqual(
    invalid.findDetails(ErrorInfoSchema).map((info) => info.reason),
    ["BAD_TOKEN"],
  );
  const plain = probeClient(service, guarding({ bearer: { roles: ["user"], verify } }, [service]));
  const unnamed = await refusalOf(plain.ping());
  t.is(unnamed.metadata.get("www-authenticate"), "Bearer");
  t.deepEqual(unnamed.findDetails(ErrorInfoSchema), [], "no code of its own without reasons");
});
