// Answers one server-reflection request. Both wire versions (v1, v1alpha) share this: their
// messages have the same shape, so the logic sees plain values and each version wraps them.
import type { DescFile } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import type { DescriptorIndex } from "./descriptor-index.js";

export interface ReflectionQuery {
  readonly messageRequest:
    | { readonly case: "fileByFilename"; readonly value: string }
    | { readonly case: "fileContainingSymbol"; readonly value: string }
    | {
        readonly case: "fileContainingExtension";
        readonly value: { readonly containingType: string; readonly extensionNumber: number };
      }
    | { readonly case: "allExtensionNumbersOfType"; readonly value: string }
    | { readonly case: "listServices"; readonly value: string }
    | { readonly case: undefined; readonly value?: undefined };
}

export type ReflectionAnswer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

/**
 * `sent` holds the files this stream already delivered. As grpc-go does, a dependency goes out
 * once per stream, while the file asked for always goes out.
 */
export function answerReflection(index: DescriptorIndex, query: ReflectionQuery, sent: Set<string>): ReflectionAnswer {
  const request = query.messageRequest;
  switch (request.case) {
    case "listServices":
      return {
        case: "listServicesResponse",
        value: { service: index.serviceNames.map((name) => ({ name })) },
      };
    case "fileByFilename":
      return withFile(index, index.fileByName(request.value), sent, `file ${request.value}`);
    case "fileContainingSymbol":
      return withFile(index, index.fileBySymbol(request.value), sent, `symbol ${request.value}`);
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = request.value;
      const file = index.fileByExtension(containingType, extensionNumber);
      return withFile(index, file, sent, `extension ${extensionNumber} of ${containingType}`);
    }
    case "allExtensionNumbersOfType": {
      const numbers = index.extensionNumbers(request.value);
      if (numbers === undefined) {
        return notFound(`type ${request.value}`);
      }
      return {
        case: "allExtensionNumbersResponse",
        value: { baseTypeName: request.value.replace(/^\./, ""), extensionNumber: numbers },
      };
    }
    default:
      return {
        case: "errorResponse",
        value: { errorCode: Code.InvalidArgument, errorMessage: "empty or unknown message_request" },
      };
  }
}

function withFile(index: DescriptorIndex, file: DescFile | undefined, sent: Set<string>, what: string): ReflectionAnswer {
  if (file === undefined) {
    return notFound(what);
  }
  const out: Uint8Array[] = [];
  const queue = [file];
  const seen = new Set<string>();
  for (let current = queue.shift(); current !== undefined; current = queue.shift()) {
    const name = current.proto.name;
    if (seen.has(name)) {
      continue;
    }
    seen.add(name);
    if (current === file || !sent.has(name)) {
      out.push(index.serialize(current));
      sent.add(name);
    }
    queue.push(...current.dependencies);
  }
  return { case: "fileDescriptorResponse", value: { fileDescriptorProto: out } };
}

function notFound(what: string): ReflectionAnswer {
  return { case: "errorResponse", value: { errorCode: Code.NotFound, errorMessage: `${what} not found` } };
}
