// Contract checks of the hub options: each mistake stops the front at start, naming it.
import test from "ava";
import { clone, create, type DescMethod, type DescService, getOption, type MessageInitShape, setExtension } from "@bufbuild/protobuf";
import { MethodOptionsSchema, ServiceOptionsSchema } from "@bufbuild/protobuf/wkt";
import { HubSchema, HubMethodSchema, hub_method, hubs } from "../../gen/meshwork/api/v1/options_pb.js";
import { ChatHubService } from "../../test/gen/meshwork/testing/v1/hubs_pb.js";
import { typeRegistryOf } from "../transcoder/type-registry.js";
import { compileHubTable } from "./hub-table.js";

const registry = typeRegistryOf([ChatHubService]);

/** ChatHubService with its hubs and one method's binding replaced. */
function variant(
  declared: MessageInitShape<typeof HubSchema>[] | undefined,
  method?: { name: string; binding: MessageInitShape<typeof HubMethodSchema> },
): DescService {
  const serviceOptions = clone(ServiceOptionsSchema, ChatHubService.proto.options ?? create(ServiceOptionsSchema));
  if (declared)
    setExtension(
      serviceOptions,
      hubs,
      declared.map((h) => create(HubSchema, h)),
    );
  const methods: DescMethod[] = ChatHubService.methods.map((m) => {
    if (m.name !== method?.name) return m;
    const options = clone(MethodOptionsSchema, m.proto.options ?? create(MethodOptionsSchema));
    setExtension(options, hub_method, create(HubMethodSchema, { ...getOption(m, hub_method), ...method.binding }));
    return { ...m, proto: { ...m.proto, options } } as DescMethod;
  });
  const service = { ...ChatHubService, proto: { ...ChatHubService.proto, options: serviceOptions }, methods } as DescService;
  for (const m of methods) (m as { parent: DescService }).parent = service;
  return service;
}

const chat = { path: "/hubs/chat", connect: "Connect", push: ["WatchActivity"] };
const events = { path: "/hubs/events", connect: "Connect" };
const runs = { path: "/hubs/runs", connect: "Connect", push: ["WatchActivityRuns"] };

test("the test contract compiles: three hubs, their methods, push rpcs and event streams", (t) => {
  const table = compileHubTable([ChatHubService], registry);
  t.deepEqual([...table.keys()], ["/hubs/chat", "/hubs/events", "/hubs/runs"]);
  t.deepEqual(
    [...table.get("/hubs/chat")!.methods.values()].map((m) => [m.name, m.streaming]),
    [
      ["StreamChat", true],
      ["ListRooms", false],
    ],
  );
  t.deepEqual(
    table.get("/hubs/chat")!.push.map((m) => m.name),
    ["WatchActivity"],
  );
  t.is(table.get("/hubs/events")!.eventStream?.eventField?.name, "event_type");
  // items_field: the frame's fields are the element's (HubEvent), not the run's.
  t.is(table.get("/hubs/runs")!.eventStream?.eventField?.parent.typeName, "meshwork.testing.v1.HubEvent");
  t.deepEqual(
    table.get("/hubs/runs")!.push.map((m) => m.output.typeName),
    ["meshwork.api.v1.HubClientCalls"],
  );
});

const mistakes: [what: string, service: () => DescService, message: RegExp][] = [
  ["a templated path", () => variant([{ ...chat, path: "/hubs/{id}" }, events, runs]), /literal segments/],
  ["a path declared twice", () => variant([chat, chat, events, runs]), /declared twice/],
  ["an unknown connect rpc", () => variant([{ ...chat, connect: "Nope" }, events, runs]), /connect rpc "Nope"/],
  ["a connect rpc of the wrong shape", () => variant([{ ...chat, connect: "ListRooms" }, events, runs]), /HubConnectRequest/],
  ["a push rpc not answering HubClientCall", () => variant([{ ...chat, push: ["StreamChat"] }, events, runs]), /push rpc StreamChat/],
  [
    "a method bound to an undeclared hub",
    () => variant([chat, events, runs], { name: "ListRooms", binding: { hub: "/hubs/x" } }),
    /names hub "\/hubs\/x"/,
  ],
  [
    "an argument that is not a field",
    () => variant(undefined, { name: "StreamChat", binding: { arguments: ["room"] } }),
    /argument "room"/,
  ],
  ["a name bound twice", () => variant(undefined, { name: "ListRooms", binding: { name: "streamchat" } }), /bound twice/],
  ["a result field on a stream", () => variant(undefined, { name: "StreamChat", binding: { resultField: "type" } }), /unary methods/],
  ["an unknown result field", () => variant(undefined, { name: "ListRooms", binding: { resultField: "nope" } }), /result_field "nope"/],
  [
    "items_field on a unary method",
    () => variant(undefined, { name: "ListRooms", binding: { itemsField: "rooms" } }),
    /items_field is for server-streaming/,
  ],
  [
    "an items_field that is not a repeated message",
    () => variant(undefined, { name: "StreamChat", binding: { itemsField: "content" } }),
    /items_field "content" is not a repeated message field/,
  ],
  ["hub bindings without hubs", () => variant([]), /declares no \(meshwork.api.v1.hubs\)/],
];
for (const [what, service, message] of mistakes) {
  test(`refused at start: ${what}`, (t) => {
    const error = t.throws(() => compileHubTable([service()], registry));
    t.regex(error!.message, message);
  });
}
