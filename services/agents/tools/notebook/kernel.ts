// A notebook kernel: one python3 driver process (driver.ts) per agent and notebook, in its own
// process group in the notebook's directory, with the runner's environment. Requests are JSON lines
// matched to answers by id; a request over its timeout kills the kernel (its state is lost, the
// next request starts a fresh one). Kernels are kept per key, at most MAX_KERNELS (the least
// recently used is ended), and killed when the process exits.
import { Child } from "../process/runner.js";
import { ToolError } from "../tool.js";
import { DRIVER } from "./driver.js";

const MAX_KERNELS = 16;

export class Kernel {
  private readonly child: Child;
  private buffer = "";
  private next = 0;
  private readonly waiting = new Map<number, (answer: Record<string, unknown>) => void>();

  constructor(cwd: string, env: Record<string, string>, maxChars: number) {
    this.child = new Child("python3", ["-u", "-c", DRIVER], {
      cwd,
      env,
      maxChars,
      keep: "tail",
      interactive: true,
      unref: true,
      onStdout: (chunk) => this.read(chunk),
    });
    void this.child.done.then(() => {
      for (const resolve of this.waiting.values()) resolve({ exited: true });
      this.waiting.clear();
    });
  }

  /** False from the moment the kernel is killed, before its exit is seen: it is never reused. */
  get alive(): boolean {
    return this.child.running && !this.child.killed;
  }

  /** Sends a request; ToolError when the kernel dies or the timeout passes (then it is killed). */
  async request(message: Record<string, unknown>, timeoutMs: number): Promise<Record<string, unknown>> {
    if (!this.alive) throw new ToolError("the notebook kernel has stopped");
    const id = ++this.next;
    let timer: NodeJS.Timeout | undefined;
    const answer = new Promise<Record<string, unknown>>((resolve) => {
      this.waiting.set(id, resolve);
      timer = setTimeout(() => resolve({ timedOut: true }), timeoutMs);
    });
    this.child.write(`${JSON.stringify({ ...message, id })}\n`);
    const got = await answer;
    clearTimeout(timer);
    this.waiting.delete(id);
    if (got.timedOut) {
      this.kill();
      throw new ToolError(`the cell ran over ${Math.round(timeoutMs / 1000)} s; the kernel was stopped and its state is lost`);
    }
    if (got.exited) throw new ToolError(`the notebook kernel exited: ${this.child.output.output.trim().split("\n").slice(-3).join("\n")}`);
    return got;
  }

  kill(): void {
    if (this.alive) this.child.kill();
  }

  private read(chunk: string): void {
    this.buffer += chunk;
    for (let newline = this.buffer.indexOf("\n"); newline >= 0; newline = this.buffer.indexOf("\n")) {
      const line = this.buffer.slice(0, newline);
      this.buffer = this.buffer.slice(newline + 1);
      try {
        const answer = JSON.parse(line) as Record<string, unknown>;
        this.waiting.get(answer.id as number)?.(answer);
      } catch {
        // Not a protocol line: ignored.
      }
    }
  }
}

const kernels = new Map<string, Kernel>();
let exitHook = false;

/** The kernel of `key` (agent and notebook), started when missing or dead. */
export function kernelFor(key: string, start: () => Kernel): Kernel {
  if (!exitHook) {
    exitHook = true;
    process.once("exit", () => {
      for (const kernel of kernels.values()) kernel.kill();
    });
  }
  let kernel = kernels.get(key);
  if (kernel?.alive) {
    kernels.delete(key);
    kernels.set(key, kernel);
    return kernel;
  }
  kernel = start();
  kernels.set(key, kernel);
  if (kernels.size > MAX_KERNELS) {
    const [oldestKey, oldest] = kernels.entries().next().value as [string, Kernel];
    oldest.kill();
    kernels.delete(oldestKey);
  }
  return kernel;
}
