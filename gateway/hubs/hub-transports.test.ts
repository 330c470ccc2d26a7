// The same hub behaviour whichever way the front reaches the service: the mesh's in-process direct
// transport (all-in-one) and gRPC to a service host (a gateway-only process), where a cancel has
// to cross the network to abort the rpc.
import test from "ava";
import { HttpTransportType, type HubConnection, HubConnectionBuilder, LogLevel } from "@microsoft/signalr";
import { type HubHarness, KEYS, startHubHarness } from "../../test/support/hub-harness.js";
import { until } from "../../test/support/until.js";

for (const kind of ["direct", "grpc"] as const) {
  let h: HubHarness;
  test.before(async () => {
    h = await startHubHarness({ transport: kind });
  });
  test.after.always(() => h?.close());

  const connect = async (key: string, statuses: unknown[][] = []): Promise<HubConnection> => {
    const connection = new HubConnectionBuilder()
      .withUrl(`${h.url}/hubs/chat?api_key=${key}`, { transport: HttpTransportType.WebSockets })
      .configureLogging(LogLevel.None)
      .build();
    // Before start: the push stream's first call comes right after the handshake.
    connection.on("ChannelStatusChanged", (...args: unknown[]) => statuses.push(args));
    await connection.start();
    return connection;
  };

  test(`${kind}: stream, unary, Forbidden, push and cancel`, async (t) => {
    const statuses: unknown[][] = [];
    const connection = await connect(KEYS.operator, statuses);
    t.teardown(() => connection.stop());

    const items: unknown[] = [];
    await new Promise<void>((resolve, reject) =>
      connection.stream("StreamChat", "t1", "a b").subscribe({ next: (i) => items.push(i), complete: resolve, error: reject }),
    );
    t.is(items.length, 4);
    t.deepEqual(await connection.invoke("ListRooms", "gen"), [{ roomId: "r1", title: "general", memberCount: 3 }]);
    await until(() => statuses.length > 0, "the push call");
    t.deepEqual(statuses[0], ["web", true]);

    const reader = await connect(KEYS.user);
    t.teardown(() => reader.stop());
    const refused = await t.throwsAsync(
      new Promise<void>((resolve, reject) =>
        reader.stream("StreamChat", "t1", "x").subscribe({ next: () => {}, complete: resolve, error: reject }),
      ),
    );
    t.regex(refused!.message, /^Forbidden/);

    const first: unknown[] = [];
    const subscription = connection
      .stream("StreamChat", `${kind}-hang`, "hang")
      .subscribe({ next: (i) => first.push(i), complete: () => {}, error: () => {} });
    await until(() => first.length === 1, "the hanging stream's first item");
    const call = h.calls.find((c) => c.rpc === "StreamChat" && (c.input as { roomId?: string }).roomId === `${kind}-hang`)!;
    t.false(call.signal.aborted);
    subscription.dispose();
    await until(() => call.signal.aborted, "the service's abort");
  });
}
