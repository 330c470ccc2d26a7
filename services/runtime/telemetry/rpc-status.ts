// Names for RPC status codes as each convention spells them, and which codes count as failures.
import { Code } from "@connectrpc/connect";

export type RpcSystem = "grpc" | "connect_rpc";

// gRPC's canonical names (note CANCELLED); Connect's codes share the numbers.
const grpcNames: Record<number, string> = {
  0: "OK",
  [Code.Canceled]: "CANCELLED",
  [Code.Unknown]: "UNKNOWN",
  [Code.InvalidArgument]: "INVALID_ARGUMENT",
  [Code.DeadlineExceeded]: "DEADLINE_EXCEEDED",
  [Code.NotFound]: "NOT_FOUND",
  [Code.AlreadyExists]: "ALREADY_EXISTS",
  [Code.PermissionDenied]: "PERMISSION_DENIED",
  [Code.ResourceExhausted]: "RESOURCE_EXHAUSTED",
  [Code.FailedPrecondition]: "FAILED_PRECONDITION",
  [Code.Aborted]: "ABORTED",
  [Code.OutOfRange]: "OUT_OF_RANGE",
  [Code.Unimplemented]: "UNIMPLEMENTED",
  [Code.Internal]: "INTERNAL",
  [Code.Unavailable]: "UNAVAILABLE",
  [Code.DataLoss]: "DATA_LOSS",
  [Code.Unauthenticated]: "UNAUTHENTICATED",
};

/** "NOT_FOUND": the gRPC spelling, which `rpc.status_code` uses for both systems. */
export function grpcStatusName(code: number): string {
  return grpcNames[code] ?? "UNKNOWN";
}

/** "not_found": the Connect protocol's spelling. */
export function connectErrorCode(code: number): string {
  return code === Code.Canceled ? "canceled" : grpcStatusName(code).toLowerCase();
}

// What the semantic conventions call a server-side failure: the server's fault, not the caller's.
const serverFaults = new Set<number>([
  Code.Unknown,
  Code.DeadlineExceeded,
  Code.Unimplemented,
  Code.Internal,
  Code.Unavailable,
  Code.DataLoss,
]);

export function isFailure(side: "server" | "client", code: number): boolean {
  return side === "client" ? code !== 0 : serverFaults.has(code);
}

/** gRPC and gRPC-web announce themselves in Content-Type; everything else here is Connect. */
export function rpcSystemOf(header: Headers): RpcSystem {
  return (header.get("content-type") ?? "").startsWith("application/grpc") ? "grpc" : "connect_rpc";
}
