// The Signal adapter against a loopback signal-cli HTTP daemon with a recording ChannelHost, no
// mesh: a message refused while the gateway drains closes the event stream without taking its
// event id, and the stream reopened after the drain asks from the last event taken (Last-Event-ID);
// that is not reported as a loss.
import test from "ava";
import pino from "pino";
import { startFakeSignal } from "../../../test/support/fake-signal.js";
import { until } from "../../../test/support/until.js";
import type { ChannelHost, InboundMessage } from "./channel-adapter.js";
import { createSignalChannel } from "./signal.js";

test("a message refused while draining leaves the Last-Event-ID before it; the stream reopens from there once messages are taken", async (t) => {
  const fake = await startFakeSignal();
  const received: InboundMessage[] = [];
  const changes: boolean[] = [];
  let refusing = false;
  let release: (() => void) | undefined;
  const waits: number[] = [];
  const host: ChannelHost = {
    receive: (message) => !refusing && received.push(message) > 0,
    accepting: (signal) => {
      waits.push(Date.now());
      return new Promise<void>((resolve) => {
        release = resolve;
        signal.addEventListener("abort", () => resolve(), { once: true });
      });
    },
    connectionChanged: (connected) => void changes.push(connected),
    logger: pino({ level: "silent" }),
  };
  const adapter = createSignalChannel({ baseUrl: fake.url, account: fake.account }, host);
  t.teardown(async () => {
    await adapter.disconnect();
    await fake.close();
  });
  await adapter.connect();
  await until(() => fake.openStreams() === 1, "the event stream");

  const taken = fake.receive({ source: "+15550001111", text: "before the drain" });
  await until(() => received.length === 1, "the first message");

  refusing = true;
  fake.receive({ source: "+15550001111", text: "during the drain" });
  await until(
    () => waits.length === 1 && fake.openStreams() === 0,
    "the stream closed at the refused message, waiting for the drain's end",
  );
  t.deepEqual(fake.streamRequests, [undefined], "no new stream while draining");

  refusing = false;
  release!();
  await until(() => fake.streamRequests.length === 2 && fake.openStreams() === 1, "a new stream");
  t.is(fake.streamRequests[1], taken, "asked from the last event taken, not past the refused one");
  t.deepEqual(changes, [], "not a loss");
  t.deepEqual(
    received.map((m) => m.text),
    ["before the drain"],
  );
});
