// argon2id password hashes (libsodium's crypto_pwhash_str) computed in worker threads, so a
// login never blocks the event loop for the tens of milliseconds a hash takes. The workers run a
// few lines of plain JavaScript (no TypeScript loader needed in a worker); passwords reach them
// through postMessage only and are never logged.
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { randomUUID } from "node:crypto";
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

/**
 * The workers start on the first hash, not with the module: a process that never sees a password
 * (a mesh serving other traffic, a test of another service) pays nothing for them.
 */
export function createPasswordHasher(options: HasherOptions): PasswordHasher {
  const sodiumPath = createRequire(import.meta.url).resolve("libsodium-wrappers-sumo");
  const count = options.threads ?? Math.max(1, Math.min(4, availableParallelism()));
  const pending = new Map<number, Pending & { worker: Worker }>();
  let nextId = 0;
  let turn = 0;
  let started: Promise<{ workers: Worker[]; decoy: string }> | undefined;
  let closed = false;

  function spawn(): Promise<Worker> {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { sodiumPath, memoryKiB: options.memoryKiB, iterations: options.iterations },
    });
    worker.unref();
    worker.on("message", ({ id, result, error }: { id: number; result?: string | boolean; error?: string }) => {
      const call = pending.get(id);
      if (!call) return;
      pending.delete(id);
      if (error !== undefined) call.reject(new Error(`password hashing failed: ${error}`));
      else call.resolve(result!);
    });
    // A worker that dies fails its calls instead of leaving them waiting.
    worker.once("exit", () => {
      for (const [id, call] of pending) {
        if (call.worker !== worker) continue;
        pending.delete(id);
        call.reject(new Error("password hashing worker stopped"));
      }
    });
    return new Promise((resolve, reject) => {
      worker.once("error", reject);
      worker.once("message", () => resolve(worker));
    });
  }

  function send(worker: Worker, op: "hash" | "verify", password: string, hash?: string): Promise<string | boolean> {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject, worker });
      worker.postMessage({ id, op, password, hash });
    });
  }

  function pool() {
    if (closed) return Promise.reject(new Error("the password hasher is closed"));
    started ??= (async () => {
      const workers = await Promise.all(Array.from({ length: count }, spawn));
      // A hash with the configured cost, of a password nobody knows.
      const decoy = (await send(workers[0]!, "hash", randomUUID())) as string;
      return { workers, decoy };
    })();
    return started;
  }

  async function run(op: "hash" | "verify", password: string, hash?: string): Promise<string | boolean> {
    const { workers } = await pool();
    return send(workers[turn++ % workers.length]!, op, password, hash);
  }

  return {
    hash: (password) => run("hash", password) as Promise<string>,
    verify: (hash, password) => run("verify", password, hash) as Promise<boolean>,
    async verifyNothing(password) {
      const { decoy } = await pool();
      await run("verify", password, decoy);
    },
    async close() {
      closed = true;
      const running = await started?.catch(() => undefined);
      await Promise.all((running?.workers ?? []).map((w) => w.terminate()));
    },
  };
}
