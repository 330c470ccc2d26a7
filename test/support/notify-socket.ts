// A real sd_notify socket for tests: a unix datagram socket bound by a small python3 process (Node
// cannot bind one), reporting each datagram it receives. `path` may be `@name` (abstract).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import type { ExecutionContext } from "ava";

const RECEIVER = `
import json, os, socket, sys
path = sys.argv[1]
address = "\\0" + path[1:] if path.startswith("@") else path
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(address)
print("bound", flush=True)
while True:
    data = s.recv(65536)
    print(json.dumps(data.decode()), flush=True)
`;

export interface NotifySocket {
  /** The datagrams received so far, in order. */
  received: string[];
}

export async function notifySocket(t: ExecutionContext, path: string): Promise<NotifySocket> {
  const receiver = spawn("python3", ["-c", RECEIVER, path], { stdio: ["ignore", "pipe", "inherit"] });
  t.teardown(() => receiver.kill("SIGKILL"));
  const lines = createInterface({ input: receiver.stdout });
  const received: string[] = [];
  const bound = new Promise<void>((resolve, reject) => {
    lines.on("line", (line) => (line === "bound" ? resolve() : received.push(JSON.parse(line) as string)));
    receiver.once("exit", (code) => reject(new Error(`the notify socket's receiver exited (${code})`)));
    receiver.once("error", reject);
  });
  await Promise.race([bound, once(receiver, "exit").then(() => bound)]);
  return { received };
}
