// grpc.reflection.v1 and v1alpha ServerReflection: lets grpcurl, buf curl and Postman discover
// the services and their schemas at run time, with no .proto files at hand.
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import * as v1 from "../../../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import type { DescriptorIndex } from "./descriptor-index.js";
import { answerReflection } from "./reflection-answer.js";

export function createReflectionV1Service(index: DescriptorIndex): ServiceImpl<typeof v1.ServerReflection> {
  return {
    async *serverReflectionInfo(requests) {
      const sent = new Set<string>();
      for await (const request of requests) {
        yield create(v1.ServerReflectionResponseSchema, {
          validHost: request.host,
          originalRequest: request,
          messageResponse: answerReflection(index, request, sent),
        });
      }
    },
  };
}

export function createReflectionV1alphaService(index: DescriptorIndex): ServiceImpl<typeof v1alpha.ServerReflection> {
  return {
    async *serverReflectionInfo(requests) {
      const sent = new Set<string>();
      for await (const request of requests) {
        yield create(v1alpha.ServerReflectionResponseSchema, {
          validHost: request.host,
          originalRequest: request,
          messageResponse: answerReflection(index, request, sent),
        });
      }
    },
  };
}
