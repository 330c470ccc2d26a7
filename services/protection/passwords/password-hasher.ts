// argon2id password hashes (libsodium's crypto_pwhash_str) computed in worker threads, so a
// login never blocks the event loop for the tens of milliseconds a hash takes. The workers run a
// few lines of plain JavaScript (no TypeScript loader needed in a worker); passwords reach them
// through postMessage only and are never logged.
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { createRequire } from "node:module";

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(hash: string, password: string): Promise<boolean>;
  /** Costs one verification against a hash of nothing: an unknown e-mail takes as long as a wrong password. */
  verifyNothing(password: string): Promise<void>;
  close(): Promise<void>;
}

export interface HasherOptions {
  memoryKiB: number;
  iterations: number;
  /** Worker threads; default: the cores, at most 4. */
  threads?: number;
}

const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const sodium = require(workerData.sodiumPath);
sodium.ready.then(() => {
  parentPort.on("message", ({ id, op, password, hash }) => {
    try {
      const result = op === "hash"
        ? sodium.crypto_pwhash_str(password, workerData.iterations, workerData.memoryKiB * 1024)
        : sodium.crypto_pwhash_str_verify(hash, password);
      parentPort.postMessage({ id, result });
    } catch (err) {
      parentPort.postMessage({ id, error: String(err && err.message || err) });
    }
  });
  parentPort.postMessage({ ready: true });
});
`;

interface Pending {
  resolve(value: string | boolean): void;
  reject(err: Error): void;
}

export async function createPasswordHasher(options: HasherOptions): Promise<PasswordHasher> {
  const sodiumPath = createRequire(import.meta.url).resolve("libsodium-wrappers-sumo");
  const count = options.threads ?? Math.max(1, Math.min(4, availableParallelism()));
  const pending = new Map<number, Pending>();
  let nextId = 0;
  const workers = await Promise.all(
    Array.from({ length: count }, async () => {
      const worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: { sodiumPath, memoryKiB: options.memoryKiB, iterations: options.iterations },
      });
      worker.unref();
      await new Promise<void>((resolve, reject) => {
        worker.once("error", reject);
        worker.once("message", () => resolve());
      });
      worker.on("message", ({ id, result, error }: { id: number; result?: string | boolean; error?: string }) => {
        const call = pending.get(id);
        if (!call) return;
        pending.delete(id);
        if (error !== undefined) call.reject(new Error(`password hashing failed: ${error}`));
        else call.resolve(result!);
      });
      return worker;
    }),
  );
  let turn = 0;

  function run(op: "hash" | "verify", password: string, hash?: string): Promise<string | boolean> {
    const id = nextId++;
    const worker = workers[turn++ % workers.length]!;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      worker.postMessage({ id, op, password, hash });
    });
  }

  const hasher: PasswordHasher = {
    hash: (password) => run("hash", password) as Promise<string>,
    verify: (hash, password) => run("verify", password, hash) as Promise<boolean>,
    async verifyNothing(password) {
      await run("verify", password, decoy);
    },
    async close() {
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
  // A hash with the configured cost, of a password nobody knows.
  const decoy = (await run("hash", crypto.randomUUID())) as string;
  return hasher;
}
