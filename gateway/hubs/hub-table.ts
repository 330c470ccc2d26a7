// Compiles the hub options of a front's services (meshwork.api.v1 hubs, hub_method,
// hub_event_stream) into the table the hub server serves. Every check that can fail on a contract
// fails here, at start, never on a connection.
import {
  getOption,
  hasOption,
  type DescField,
  type DescMethod,
  type DescService,
  type JsonObject,
  type JsonValue,
  type Message,
  type Registry,
  ScalarType,
} from "@bufbuild/protobuf";
import {
  HubClientCallSchema,
  HubClientCallsSchema,
  HubConnectRequestSchema,
  HubConnectResponseSchema,
} from "../../gen/meshwork/api/v1/hubs_pb.js";
import { hub_event_stream, hub_method, hubs } from "../../gen/meshwork/api/v1/options_pb.js";
import { serviceStyleOf, type ServiceStyle } from "../style.js";
import { messageJsonWriter } from "../transcoder/response-mapping.js";

export interface HubMethodPlan {
  /** As the contract writes it, for errors and logs. */
  readonly name: string;
  readonly label: string;
  readonly method: DescMethod;
  readonly streaming: boolean;
  /** Request fields filled from the positional arguments, in order. */
  readonly arguments: readonly DescField[];
  /** A stream's items: the elements of each answer (items_field), or each answer itself. */
  itemsOf(message: Message): readonly Message[];
  /** The JSON of an item of a stream, or of a unary method's answer (its result). */
  toJson(message: Message): JsonValue;
}

export interface HubEventStreamPlan {
  readonly label: string;
  readonly method: DescMethod;
  /** Fields of the frame's message: an answer, or an element of its items_field. */
  readonly eventField: DescField | undefined;
  readonly idField: DescField | undefined;
  /** The frames of an answer: the elements of its items_field, or the answer itself. */
  itemsOf(message: Message): readonly Message[];
  toJson(message: Message): JsonObject;
}

export interface CompiledHub {
  readonly path: string;
  readonly service: DescService;
  readonly style: ServiceStyle;
  readonly connect: DescMethod;
  readonly push: readonly DescMethod[];
  /** Keyed by the lower-cased name: SignalR servers match method names without regard to case. */
  readonly methods: ReadonlyMap<string, HubMethodPlan>;
  readonly eventStream: HubEventStreamPlan | undefined;
}

const HUB_PATH = /^(\/[A-Za-z0-9._~-]+)+$/;
const PUSH_TYPES = new Set<string>([HubClientCallSchema.typeName, HubClientCallsSchema.typeName]);

/** Each answer is one item. */
const itself = (message: Message): readonly Message[] => [message];

/**
 * The items_field of a stream's answer (a repeated message field), or undefined when unset; the
 * message its items are, and how to read them out of an answer.
 */
function itemsFieldOf(method: DescMethod, name: string, where: string) {
  if (name === "") return undefined;
  const field = method.output.fields.find((f) => f.name === name);
  if (field?.fieldKind !== "list" || field.listKind !== "message") {
    throw new Error(`${where}: items_field "${name}" is not a repeated message field of ${method.output.typeName}`);
  }
  const key = field.localName;
  return {
    message: field.message,
    itemsOf: (answer: Message): readonly Message[] => (answer as unknown as Record<string, readonly Message[]>)[key]!,
  };
}

function labelOf(method: DescMethod): string {
  return `${method.parent.typeName}/${method.name}`;
}

export function compileHubTable(services: readonly DescService[], registry: Registry): Map<string, CompiledHub> {
  const table = new Map<string, CompiledHub>();
  for (const service of services) {
    const declared = getOption(service, hubs);
    if (declared.length === 0) {
      for (const method of service.methods) {
        if (hasOption(method, hub_method) || hasOption(method, hub_event_stream)) {
          throw new Error(`${labelOf(method)}: binds a hub, but ${service.typeName} declares no (meshwork.api.v1.hubs)`);
        }
      }
      continue;
    }
    const style = serviceStyleOf(service);
    const byName = new Map(service.methods.map((m) => [m.name, m]));
    const building = new Map<
      string,
      { connect: DescMethod; push: DescMethod[]; methods: Map<string, HubMethodPlan>; eventStream?: HubEventStreamPlan }
    >();
    for (const hub of declared) {
      const where = `${service.typeName}: hub "${hub.path}"`;
      if (!HUB_PATH.test(hub.path) || hub.path.endsWith("/negotiate")) {
        throw new Error(`${where}: a hub path is "/"-separated literal segments (e.g. /hubs/chat), not ending in /negotiate`);
      }
      if (table.has(hub.path) || building.has(hub.path)) throw new Error(`${where}: declared twice on one front`);
      const connect = byName.get(hub.connect);
      if (!connect) throw new Error(`${where}: connect rpc "${hub.connect}" is not a method of the service`);
      if (
        connect.methodKind !== "unary" ||
        connect.input.typeName !== HubConnectRequestSchema.typeName ||
        connect.output.typeName !== HubConnectResponseSchema.typeName
      ) {
        throw new Error(`${where}: connect rpc ${connect.name} must be unary, meshwork.api.v1.HubConnectRequest → HubConnectResponse`);
      }
      const push = hub.push.map((name) => {
        const method = byName.get(name);
        if (!method) throw new Error(`${where}: push rpc "${name}" is not a method of the service`);
        if (method.methodKind !== "server_streaming" || !PUSH_TYPES.has(method.output.typeName)) {
          throw new Error(`${where}: push rpc ${name} must be server-streaming, answering meshwork.api.v1.HubClientCall(s)`);
        }
        return method;
      });
      building.set(hub.path, { connect, push, methods: new Map() });
    }
    for (const method of service.methods) {
      if (hasOption(method, hub_method)) {
        const bound = getOption(method, hub_method);
        const hub = building.get(bound.hub);
        const where = `${labelOf(method)}: hub_method`;
        if (!hub) throw new Error(`${where} names hub "${bound.hub}", which ${service.typeName} does not declare`);
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(bound.name)) throw new Error(`${where}: name "${bound.name}" is not a method name`);
        const key = bound.name.toLowerCase();
        if (hub.methods.has(key)) throw new Error(`${where}: "${bound.name}" is bound twice in hub ${bound.hub}`);
        const streaming = method.methodKind === "server_streaming";
        if (!streaming && method.methodKind !== "unary")
          throw new Error(`${where}: only unary and server-streaming rpcs can be hub methods`);
        const args = bound.arguments.map((name) => {
          const field = method.input.fields.find((f) => f.name === name);
          if (!field) throw new Error(`${where}: argument "${name}" is not a field of ${method.input.typeName}`);
          return field;
        });
        if (new Set(args).size !== args.length) throw new Error(`${where}: an argument is named twice`);
        const items = itemsFieldOf(method, bound.itemsField, where);
        if (items && !streaming) throw new Error(`${where}: items_field is for server-streaming methods`);
        const write = messageJsonWriter(items?.message ?? method.output, style, registry);
        let toJson: (message: Message) => JsonValue = write;
        if (bound.resultField !== "") {
          if (streaming) throw new Error(`${where}: result_field is for unary methods`);
          const field = method.output.fields.find((f) => f.name === bound.resultField);
          if (!field) throw new Error(`${where}: result_field "${bound.resultField}" is not a field of ${method.output.typeName}`);
          const key = style.jsonNaming === "proto-name" ? field.name : field.jsonName;
          toJson = (message) => write(message)[key] ?? null;
        }
        hub.methods.set(key, {
          name: bound.name,
          label: labelOf(method),
          method,
          streaming,
          arguments: args,
          itemsOf: items?.itemsOf ?? itself,
          toJson,
        });
      }
      if (hasOption(method, hub_event_stream)) {
        const bound = getOption(method, hub_event_stream);
        const hub = building.get(bound.hub);
        const where = `${labelOf(method)}: hub_event_stream`;
        if (!hub) throw new Error(`${where} names hub "${bound.hub}", which ${service.typeName} does not declare`);
        if (method.methodKind !== "server_streaming") throw new Error(`${where}: only a server-streaming rpc can be an event stream`);
        if (hub.eventStream) throw new Error(`${where}: hub ${bound.hub} has an event stream already (${hub.eventStream.label})`);
        const items = itemsFieldOf(method, bound.itemsField, where);
        const frame = items?.message ?? method.output;
        const stringField = (name: string, what: string) => {
          if (name === "") return undefined;
          const field = frame.fields.find((f) => f.name === name);
          if (field?.fieldKind !== "scalar" || field.scalar !== ScalarType.STRING) {
            throw new Error(`${where}: ${what} "${name}" is not a string field of ${frame.typeName}`);
          }
          return field;
        };
        hub.eventStream = {
          label: labelOf(method),
          method,
          eventField: stringField(bound.eventField, "event_field"),
          idField: stringField(bound.idField, "id_field"),
          itemsOf: items?.itemsOf ?? itself,
          toJson: messageJsonWriter(frame, style, registry),
        };
      }
    }
    for (const [path, hub] of building) {
      table.set(path, { path, service, style, connect: hub.connect, push: hub.push, methods: hub.methods, eventStream: hub.eventStream });
    }
  }
  return table;
}
