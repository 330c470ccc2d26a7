// Mesh RPC tools: every unary rpc of tracking.v1 and protection.v1 is a tool, built from the gen/
// descriptors. Canonical name `rpc.<package>.<Service>.<Method>`; function name with `.` as `_`,
// over 64 characters cut to 55 + `_` + the first 8 hex digits of the SHA-256 of the full function
// name. Parameters: the request message's JSON Schema. Tier from the HTTP rule (GET → A, DELETE →
// X, other verbs → C, none → X). The call goes through the generated Connect client to the service
// host (Tools:Mesh:Address, or `services.meshTransport`), with Tools:Mesh:ApiKey as X-Api-Key or
// Tools:Mesh:BearerToken as a bearer token as the contract's auth option says; the answer is the
// response as JSON.
import { createHash } from "node:crypto";
import { type DescMethod, type DescService, fromJson, getOption, hasOption, type JsonValue, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { http } from "../../../../gen/google/api/annotations_pb.js";
import { policyOf } from "../../../runtime/auth/policy.js";
import { createGrpcClientTransport } from "../../../runtime/host/grpc-client-transport.js";
import { type Tier, type ToolContext, type ToolSpec, ToolError } from "../tool.js";
import { MESH_RPC_PACKAGES, meshRpcFiles } from "./contracts.js";
import { parametersOf } from "./schema.js";

export const MAX_FUNCTION_NAME = 64;
/** A mesh call gives up after this long unless the envelope's timeoutMs says otherwise. */
export const RPC_TIMEOUT_MS = 30_000;

export function canonicalName(method: DescMethod): string {
  return `rpc.${method.parent.typeName}.${method.name}`;
}

export function functionNameOf(canonical: string): string {
  const name = canonical.replace(/\./g, "_");
  if (name.length <= MAX_FUNCTION_NAME) return name;
  return `${name.slice(0, 55)}_${createHash("sha256").update(name).digest("hex").slice(0, 8)}`;
}

/** The HTTP verb of the method's google.api.http rule, or undefined without one. */
export function httpVerb(method: DescMethod): string | undefined {
  if (!hasOption(method, http)) return undefined;
  const pattern = getOption(method, http).pattern;
  if (pattern.case === undefined) return undefined;
  return pattern.case === "custom" ? pattern.value.kind.toUpperCase() : pattern.case.toUpperCase();
}

export function tierOf(method: DescMethod): Tier {
  const verb = httpVerb(method);
  return verb === "GET" ? "A" : verb === "DELETE" ? "X" : verb === undefined ? "X" : "C";
}

interface MeshSettings {
  address: string;
  apiKey?: string;
  bearerToken?: string;
}

const meshSettings = (ctx: ToolContext) => (ctx.settings as unknown as { mesh: MeshSettings }).mesh;

const transports = new Map<string, Transport>();

function transportOf(ctx: ToolContext): Transport {
  const given = ctx.services.meshTransport;
  if (given) return given;
  const address = meshSettings(ctx).address;
  let transport = transports.get(address);
  if (!transport) {
    transport = createGrpcClientTransport({ baseUrl: address });
    transports.set(address, transport);
  }
  return transport;
}

/** The credential header the contract asks for, or an Error naming the setting that is missing. */
function credentialHeaders(method: DescMethod, ctx: ToolContext): Record<string, string> {
  const policy = policyOf(method);
  const settings = meshSettings(ctx);
  if (policy.kind === "api-key") {
    if (!settings.apiKey) throw new ToolError(`${canonicalName(method)} takes an API key: set Tools:Mesh:ApiKey`);
    return { "x-api-key": settings.apiKey };
  }
  if (policy.kind === "bearer") {
    if (!settings.bearerToken) throw new ToolError(`${canonicalName(method)} takes a bearer token: set Tools:Mesh:BearerToken`);
    return { authorization: `Bearer ${settings.bearerToken}` };
  }
  return {};
}

function describe(method: DescMethod): string {
  const verb = httpVerb(method);
  const rule = verb && hasOption(method, http) ? getOption(method, http) : undefined;
  const path =
    rule && rule.pattern.case !== undefined ? (rule.pattern.case === "custom" ? rule.pattern.value.path : rule.pattern.value) : "";
  const auth = policyOf(method).kind;
  return `Mesh RPC ${method.parent.name}.${method.name} (${method.parent.typeName})${verb ? `, REST ${verb} ${path}` : ""}; takes ${method.input.typeName} as JSON, answers ${method.output.typeName} as JSON${auth === "none" ? "" : `; needs ${auth === "api-key" ? "Tools:Mesh:ApiKey" : "Tools:Mesh:BearerToken"}`}.`;
}

function toolOf(service: DescService, method: DescMethod): ToolSpec {
  const canonical = canonicalName(method);
  const functionName = functionNameOf(canonical);
  return {
    name: canonical,
    ...(functionName !== canonical ? { functionName } : {}),
    description: describe(method),
    tier: tierOf(method),
    parameters: parametersOf(method.input),
    async run(args, ctx) {
      const headers = credentialHeaders(method, ctx);
      let request: ReturnType<typeof fromJson>;
      try {
        request = fromJson(method.input, args as JsonValue, { ignoreUnknownFields: true });
      } catch (error) {
        throw new ToolError(`the arguments are not a ${method.input.typeName}: ${(error as Error).message}`);
      }
      const client = createClient(service, transportOf(ctx)) as unknown as Record<
        string,
        (request: unknown, options: { headers: Record<string, string>; signal: AbortSignal; timeoutMs: number }) => Promise<unknown>
      >;
      try {
        const response = await client[method.localName]!(request, {
          headers,
          signal: ctx.signal,
          timeoutMs: ctx.timeoutMs ?? RPC_TIMEOUT_MS,
        });
        return toJson(method.output, response as never) as Record<string, unknown>;
      } catch (error) {
        if (!(error instanceof ConnectError)) throw error;
        const hint =
          error.code === Code.Unauthenticated || error.code === Code.PermissionDenied
            ? ` (check ${policyOf(method).kind === "bearer" ? "Tools:Mesh:BearerToken" : "Tools:Mesh:ApiKey"})`
            : "";
        throw new ToolError(`${canonical} failed: ${Code[error.code]}: ${error.rawMessage}${hint}`);
      }
    },
  };
}

/** The mesh RPC tools, one per unary rpc of the mesh's packages. */
export function meshRpcTools(): ToolSpec[] {
  const tools: ToolSpec[] = [];
  for (const file of meshRpcFiles) {
    for (const service of file.services) {
      if (!(MESH_RPC_PACKAGES as readonly string[]).some((p) => service.typeName.startsWith(`${p}.`))) continue;
      for (const method of service.methods) if (method.methodKind === "unary") tools.push(toolOf(service, method));
    }
  }
  return tools;
}
