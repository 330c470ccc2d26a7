// gRPC clients written by others: @grpc/grpc-js with @grpc/proto-loader reading the .proto files
// in proto/ at run time, so the service host is checked against the contract, not our generated code.
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

const PROTO_ROOT = fileURLToPath(new URL("../../proto", import.meta.url));
const GOOGLE_PROTOS = fileURLToPath(new URL("../../node_modules/google-proto-files", import.meta.url));

// biome-ignore lint/suspicious/noExplicitAny: loaded at run time, no static type
export type GrpcPackage = any;

/** The package tree of `files` (paths under proto/); options override proto-loader's settings here. */
export function loadGrpcPackage(files: string | string[], options: protoLoader.Options = {}): GrpcPackage {
  const definition = protoLoader.loadSync(files, { includeDirs: [PROTO_ROOT, GOOGLE_PROTOS], defaults: false, oneofs: true, ...options });
  return grpc.loadPackageDefinition(definition);
}

/** A unary call as a promise: rejects with the grpc-js ServiceError, whose code the tests check. */
export function unaryCall<T>(client: grpc.Client, method: string, request: object, metadata = new grpc.Metadata()): Promise<T> {
  return new Promise((resolve, reject) => {
    // biome-ignore lint/suspicious/noExplicitAny: methods are loaded at run time
    (client as any)[method](request, metadata, (err: grpc.ServiceError | null, res: T) => (err ? reject(err) : resolve(res)));
  });
}
