// Compiles the google.api.http rules of a set of services into one route trie. Every check that
// can fail on a contract fails here, at start, never on a request.
import { getOption, hasOption, type DescMethod, type DescService, type JsonReadOptions, type Registry } from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";
import { ClientAddress, client_address, forward_headers, success_status } from "../../gen/meshwork/api/v1/options_pb.js";
import { forwardableHeader } from "../http/forward-headers.js";
import { isEventStreamType } from "../streams/sse-framer.js";
import { serviceStyleOf, type ServiceStyle } from "../style.js";
import { clientFieldPath } from "./field-paths.js";
import { bindingsOfRule, type HttpBinding } from "./http-rule.js";
import { compileRequestPlan, type RequestPlan } from "./request-mapping.js";
import { compileResponsePlan, type ResponsePlan } from "./response-mapping.js";
import { RouteTrie, type TrieMatch } from "./route-trie.js";

export interface CompiledRoute {
  /** Fully-qualified method name, for logs and errors. */
  readonly label: string;
  readonly method: DescMethod;
  readonly httpMethod: string;
  readonly template: string;
  readonly style: ServiceStyle;
  readonly request: RequestPlan;
  readonly response: ResponsePlan;
  readonly streaming: boolean;
  /** A server stream of meshwork.api.v1.ServerSentEvent(Batch): framed as text/event-stream. */
  readonly eventStream: boolean;
  /** (meshwork.api.v1.client_address) = DROP: the client's address is neither passed to the service nor logged. */
  readonly dropClientAddress: boolean;
  /** (meshwork.api.v1.forward_headers): request headers passed to the service besides the defaults. */
  readonly forwardHeaders: readonly string[];
  /** A service's field path (from a BadRequest violation) as this route's client names it. */
  renameField(path: string): string;
  /**
   * The path as logs may show it: the template when a path variable is a secret (its field is
   * marked `debug_redact`, e.g. a token in `/v1/enroll/{token}`), else the request's own path.
   */
  logPath(rawPath: string): string;
}

/** One HTTP binding of one method, before compilation. */
export interface RouteSource {
  readonly method: DescMethod;
  readonly binding: HttpBinding;
  readonly style: ServiceStyle;
}

export interface RouteTable {
  readonly routes: readonly CompiledRoute[];
  match(httpMethod: string, rawPath: string): TrieMatch<CompiledRoute>;
}

const SUCCESS_STATUSES = new Set([200, 201, 202, 204]);

/** Every binding of every method that carries a google.api.http rule. */
export function routeSourcesOf(services: readonly DescService[]): RouteSource[] {
  const out: RouteSource[] = [];
  for (const service of services) {
    const style = serviceStyleOf(service);
    for (const method of service.methods) {
      if (!hasOption(method, http)) continue;
      let bindings: HttpBinding[];
      try {
        bindings = bindingsOfRule(getOption(method, http));
      } catch (e) {
        throw new Error(`${labelOf(method)}: ${(e as Error).message}`, { cause: e });
      }
      for (const binding of bindings) out.push({ method, binding, style });
    }
  }
  return out;
}

export function compileRouteTable(sources: readonly RouteSource[], registry?: Registry): RouteTable {
  const trie = new RouteTrie<CompiledRoute>();
  const routes: CompiledRoute[] = [];
  const readOptions: Partial<JsonReadOptions> = { ignoreUnknownFields: false, registry };
  for (const { method, binding, style } of sources) {
    const label = labelOf(method);
    if (method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming") {
      throw new Error(`${label}: ${method.methodKind} methods cannot be bound to HTTP`);
    }
    const status = getOption(method, success_status) || 200;
    if (!SUCCESS_STATUSES.has(status)) throw new Error(`${label}: unsupported success_status ${status}`);
    const streaming = method.methodKind === "server_streaming";
    if (streaming && status === 204) throw new Error(`${label}: a stream cannot answer 204`);
    const forwardHeaders = getOption(method, forward_headers);
    for (const name of forwardHeaders) {
      if (!forwardableHeader(name))
        throw new Error(`${label}: forward_headers cannot name "${name}" (lower-case, not an address or mesh header)`);
    }
    const request = compileRequestPlan(method, binding, readOptions);
    const response = compileResponsePlan(method, binding, style, status, registry);
    const route: CompiledRoute = {
      label,
      method,
      httpMethod: binding.httpMethod,
      template: binding.path.template,
      style,
      request,
      response,
      streaming,
      eventStream: streaming && isEventStreamType(method.output.typeName),
      dropClientAddress: getOption(method, client_address) === ClientAddress.DROP,
      forwardHeaders,
      renameField: (path) => clientFieldPath(method.input, request.bodyField, style.jsonNaming, path),
      logPath: request.pathParams.some((p) => p.field.proto.options?.debugRedact === true)
        ? () => binding.path.template
        : (rawPath) => rawPath,
    };
    trie.insert(binding.httpMethod, binding.path, route, label);
    routes.push(route);
  }
  return { routes, match: (m, p) => trie.match(m, p) };
}

function labelOf(method: DescMethod): string {
  return `${method.parent.typeName}.${method.name}`;
}
