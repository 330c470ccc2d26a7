// Whether a process has ended, for tests that check a child was killed: no such pid, or a zombie
// waiting to be reaped (its parent may not have collected it yet).
import { readFileSync } from "node:fs";

export function processGone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z") ?? true;
  } catch {
    return true;
  }
}
