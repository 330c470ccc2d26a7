// The gRPC load generator of the benchmark: an @grpc/grpc-js client (what most callers outside
// the mesh use) calling tracking.v1.AssetService/GetAsset with protobuf-es serializers, so the
// same client drives the service host and the hand-written grpc-js server alike.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { type Asset, AssetSchema, GetAssetRequestSchema } from "../gen/tracking/v1/asset_pb.js";

export const GET_ASSET_PATH = "/tracking.v1.AssetService/GetAsset";

export interface GrpcAssetClient {
  getAsset(id: string): Promise<Asset>;
  close(): void;
}

/** One channel (one HTTP/2 connection), as a grpc-js client has by default; calls multiplex on it. */
export function grpcAssetClient(url: string): GrpcAssetClient {
  const client = new grpc.Client(new URL(url).host, grpc.credentials.createInsecure());
  const serialize = (id: string): Buffer => Buffer.from(toBinary(GetAssetRequestSchema, create(GetAssetRequestSchema, { id })));
  const deserialize = (bytes: Buffer): Asset => fromBinary(AssetSchema, bytes);
  return {
    getAsset: (id) =>
      new Promise((resolve, reject) => {
        client.makeUnaryRequest(GET_ASSET_PATH, serialize, deserialize, id, (err, res) => (err ? reject(err) : resolve(res!)));
      }),
    close: () => client.close(),
  };
}
