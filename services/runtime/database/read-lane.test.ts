// The read lane against a stand-in for knex's client and tarn's pool events: connections are kept
// between reads only while nobody else asks the pool for one.
import { EventEmitter } from "node:events";
import test from "ava";
import { createReadLane, type PooledClient, type PoolOwner } from "./read-lane.js";

function fakeOwner() {
  const events = new EventEmitter();
  let pending = 0;
  let next = 0;
  const released: PooledClient[] = [];
  const owner: PoolOwner & { released: PooledClient[]; acquires: number; waiting(n: number): void; destroy(): void; otherAcquire(): void } =
    {
      released,
      acquires: 0,
      pool: { on: (event, listener) => void events.on(event, listener), numPendingAcquires: () => pending },
      async acquireConnection() {
        this.acquires++;
        events.emit("acquireRequest");
        return { id: ++next, query: async () => ({ rows: [] }) } as unknown as PooledClient;
      },
      releaseConnection(client) {
        released.push(client);
      },
      waiting(n) {
        pending = n;
      },
      destroy() {
        events.emit("poolDestroyRequest");
      },
      otherAcquire() {
        events.emit("acquireRequest");
      },
    };
  return owner;
}

test("a finished read's connection serves the next read without the pool", async (t) => {
  const owner = fakeOwner();
  const lane = createReadLane(() => owner);
  const first = await lane.acquire();
  lane.release(first);
  t.is(await lane.acquire(), first);
  t.is(owner.acquires, 1);
  t.deepEqual(owner.released, []);
});

test("anyone else asking the pool gets every idle kept connection back at once", async (t) => {
  const owner = fakeOwner();
  const lane = createReadLane(() => owner);
  const [a, b] = await Promise.all([lane.acquire(), lane.acquire()]);
  lane.release(a!);
  lane.release(b!);
  owner.otherAcquire();
  t.deepEqual(owner.released, [a, b]);
  t.not(await lane.acquire(), a, "the lane asks the pool again");
});

test("a read finishing while others wait, a failed read and a disposed connection return to the pool", async (t) => {
  const owner = fakeOwner();
  const lane = createReadLane(() => owner);
  const a = await lane.acquire();
  owner.waiting(1);
  lane.release(a);
  owner.waiting(0);
  const b = await lane.acquire();
  lane.release(b, true);
  const c = await lane.acquire();
  c.__knex__disposed = "Connection ended unexpectedly";
  lane.release(c);
  t.deepEqual(owner.released, [a, b, c]);
});

test("a pool being destroyed gets its connections back, and later reads return theirs at once", async (t) => {
  const owner = fakeOwner();
  const lane = createReadLane(() => owner);
  const a = await lane.acquire();
  const b = await lane.acquire();
  lane.release(a);
  owner.destroy();
  t.deepEqual(owner.released, [a]);
  lane.release(b);
  t.deepEqual(owner.released, [a, b]);
});
