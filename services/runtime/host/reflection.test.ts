// Server reflection, checked with clients that know nothing of our schemas: buf curl (v1, with
// no .proto files at hand) and raw grpc-js requests to the v1alpha service.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import test from "ava";
import { KNOWN_ASSET_ID, startFixture } from "../../../test/support/host-fixtures.js";

const run = promisify(execFile);
const buf = fileURLToPath(new URL("../../../node_modules/.bin/buf", import.meta.url));
const protoRoot = fileURLToPath(new URL("../../../proto", import.meta.url));

async function bufCurl(args: string[]): Promise<string> {
  const { stdout } = await run(buf, ["curl", "--http2-prior-knowledge", ...args], { timeout: 60_000 });
  return stdout;
}

test("buf curl lists services and methods through reflection", async (t) => {
  const { host, url } = await startFixture();
  t.teardown(() => host.close());

  const services = (await bufCurl(["--list-services", url])).trim().split("\n").sort();
  t.deepEqual(services, [
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
    "tracking.v1.AssetService",
  ]);

  const methods = (await bufCurl(["--list-methods", url])).trim().split("\n");
  t.true(methods.includes("tracking.v1.AssetService/GetAsset"));
  t.true(methods.includes("tracking.v1.AssetService/DeleteAsset"));
  t.true(methods.includes("grpc.health.v1.Health/Watch"));
});

test("buf curl calls GetAsset over gRPC with the schema from reflection alone", async (t) => {
  const { host, url } = await startFixture();
  t.teardown(() => host.close());

  const out = await bufCurl([
    "--protocol",
    "grpc",
    "-d",
    JSON.stringify({ id: KNOWN_ASSET_ID }),
    `${url}/tracking.v1.AssetService/GetAsset`,
  ]);
  const asset = JSON.parse(out);
  t.is(asset.id, KNOWN_ASSET_ID);
  t.is(asset.name, "Van 7");
  t.is(asset.speedThresholdKmh, 90);
  // Timestamp rendered as RFC 3339 proves google/protobuf/timestamp.proto came across too.
  t.is(asset.createdAt, "2024-05-01T10:00:00Z");
});

interface RawReflectionResponse {
  valid_host: string;
  message_response: string;
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
  all_extension_numbers_response?: { base_type_name: string; extension_number: number[] };
  list_services_response?: { service: { name: string }[] };
  error_response?: { error_code: number; error_message: string };
}

test("v1alpha reflection answers raw grpc-js requests on one stream", async (t) => {
  const { host } = await startFixture();
  t.teardown(() => host.close());
  const definition = protoLoader.loadSync("grpc/reflection/v1alpha/reflection.proto", {
    includeDirs: [protoRoot],
    keepCase: true,
    oneofs: true,
  });
  // biome-ignore lint/suspicious/noExplicitAny: loaded at run time, no static type
  const proto = grpc.loadPackageDefinition(definition) as any;
  const client = new proto.grpc.reflection.v1alpha.ServerReflection(`127.0.0.1:${host.port}`, grpc.credentials.createInsecure());
  t.teardown(() => client.close());

  const stream: grpc.ClientDuplexStream<object, RawReflectionResponse> = client.ServerReflectionInfo();
  const responses: RawReflectionResponse[] = [];
  const waiting: ((response: RawReflectionResponse) => void)[] = [];
  stream.on("data", (response: RawReflectionResponse) => {
    const resolve = waiting.shift();
    if (resolve) resolve(response);
    else responses.push(response);
  });
  const ask = (request: object): Promise<RawReflectionResponse> => {
    stream.write({ host: "meshwork", ...request });
    const ready = responses.shift();
    return ready ? Promise.resolve(ready) : new Promise((resolve) => waiting.push(resolve));
  };
  const fileNames = (response: RawReflectionResponse): string[] =>
    (response.file_descriptor_response?.file_descriptor_proto ?? []).map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name);

  const listed = await ask({ list_services: "" });
  t.is(listed.valid_host, "meshwork");
  t.true(listed.list_services_response?.service.some((s) => s.name === "grpc.reflection.v1alpha.ServerReflection"));

  // The file first, then every transitive import.
  const bySymbol = await ask({ file_containing_symbol: "tracking.v1.AssetService" });
  const sentFirst = fileNames(bySymbol);
  t.is(sentFirst[0], "tracking/v1/asset.proto");
  for (const dependency of [
    "google/api/annotations.proto",
    "google/api/http.proto",
    "google/protobuf/timestamp.proto",
    "google/protobuf/descriptor.proto",
    "meshwork/api/v1/options.proto",
  ]) {
    t.true(sentFirst.includes(dependency), dependency);
  }
  const asset = fromBinary(FileDescriptorProtoSchema, bySymbol.file_descriptor_response!.file_descriptor_proto[0]!);
  t.is(asset.package, "tracking.v1");
  t.deepEqual(
    asset.service[0]?.method.map((m) => m.name),
    ["ListAssets", "CreateAsset", "GetAsset", "UpdateAsset", "DeleteAsset"],
  );

  // Already sent on this stream: only the file asked for comes back, not its imports again.
  t.deepEqual(fileNames(await ask({ file_by_filename: "meshwork/api/v1/options.proto" })), ["meshwork/api/v1/options.proto"]);
  t.deepEqual(fileNames(await ask({ file_containing_symbol: "tracking.v1.AssetService.GetAsset" })), ["tracking/v1/asset.proto"]);

  // Nested types, enum values and well-known types nobody imports are answerable too.
  t.deepEqual(fileNames(await ask({ file_containing_symbol: "grpc.health.v1.HealthCheckResponse.ServingStatus" })), [
    "grpc/health/v1/health.proto",
  ]);
  t.deepEqual(fileNames(await ask({ file_containing_symbol: "grpc.health.v1.HealthCheckResponse.SERVING" })), [
    "grpc/health/v1/health.proto",
  ]);
  t.deepEqual(fileNames(await ask({ file_by_filename: "google/protobuf/empty.proto" })), ["google/protobuf/empty.proto"]);

  // google.api.http is extension 72295728 of MethodOptions.
  t.deepEqual(
    fileNames(
      await ask({
        file_containing_extension: { containing_type: "google.protobuf.MethodOptions", extension_number: 72295728 },
      }),
    ),
    ["google/api/annotations.proto"],
  );
  const numbers = await ask({ all_extension_numbers_of_type: "google.protobuf.MethodOptions" });
  t.is(numbers.all_extension_numbers_response?.base_type_name, "google.protobuf.MethodOptions");
  t.true(numbers.all_extension_numbers_response?.extension_number.includes(72295728));

  for (const request of [
    { file_containing_symbol: "tracking.v1.NoSuchThing" },
    { file_by_filename: "nope.proto" },
    { all_extension_numbers_of_type: "tracking.v1.Nothing" },
    { file_containing_extension: { containing_type: "google.protobuf.MethodOptions", extension_number: 1 } },
  ]) {
    const answer = await ask(request);
    t.is(answer.message_response, "error_response");
    t.is(answer.error_response?.error_code, grpc.status.NOT_FOUND);
  }
  stream.end();
});
