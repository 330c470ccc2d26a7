// The client timeout counts a client's silence on the server's own clock: a server whose event
// loop was held up (saturated by its own work) does not time out the clients whose pings it could
// not read meanwhile, and still times out a client that stays silent once it runs again. Its own
// file: the test holds up the whole process's loop, which would skew the timing of other tests.
import test from "ava";
import { type HubHarness, type HubSocket, KEYS, openHubSocket, startHubHarness } from "../../test/support/hub-harness.js";
import { until } from "../../test/support/until.js";

const RS = "\u001e";
let quick: HubHarness;
test.before(async () => {
  quick = await startHubHarness({ hubs: { keepAliveSeconds: 0.2, clientTimeoutSeconds: 0.8, handshakeTimeoutSeconds: 5 } });
});
test.after.always(() => quick?.close());

async function handshaken(): Promise<HubSocket> {
  const socket = await openHubSocket(quick, "/hubs/chat", { "x-api-key": KEYS.user });
  socket.ws.send(`{"protocol":"json","version":1}${RS}`);
  await until(() => socket.records.length > 0, "the handshake answer");
  return socket;
}

/** Holds up the event loop (the server's, in this process) for `ms`: nothing is read or sent meanwhile. */
function holdUpLoop(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // busy: what a saturated server looks like to its clients
  }
}

test.serial("a pinging client outlives a held-up server loop longer than the client timeout", async (t) => {
  const socket = await handshaken();
  let closed = false;
  void socket.closed.then(() => (closed = true));
  const pinger = setInterval(() => socket.ws.send(`{"type":6}${RS}`), 100);
  try {
    await until(() => socket.records.filter((r) => r.type === 6).length >= 2, "two server pings");
    holdUpLoop(2_000);
    const pings = socket.records.filter((r) => r.type === 6).length;
    // Several client timeouts' worth of server pings after the hold-up, the client pinging all along.
    await until(() => socket.records.filter((r) => r.type === 6).length >= pings + 10, "ten more server pings");
    t.false(closed);
    t.false(
      socket.records.some((r) => r.type === 7),
      "no Close message",
    );
  } finally {
    clearInterval(pinger);
    socket.ws.close();
  }
});

test.serial("a client that stays silent after a held-up loop is still timed out", async (t) => {
  const socket = await handshaken();
  holdUpLoop(1_000);
  t.is(await socket.closed, 1000);
  const last = socket.records.at(-1)!;
  t.is(last.type, 7);
  t.regex(String(last.error), /timeout/i);
});
