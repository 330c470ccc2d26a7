// The periodic release check of `app-daemon run`: the first one Updates:CheckInterval after the
// daemon is ready (but at most an hour after), then every CheckInterval. A newer release is
// announced once: the version announced is remembered in `~/.app/update-state.json`, so neither a
// later check nor a restart announces it again (a newer one still is). Announcing is the
// `gateway.update.available` event, and with Updates:NotifyChannels a notice through the channel
// router's hook; with Updates:AutoApply every check that finds a release starts the apply flow
// (a failed apply is tried again at the next check). A feed failure is logged (its URL, never the
// token) and the next check comes at the next interval as usual.
import { existsSync, readFileSync } from "node:fs";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { UpdateAvailable } from "./gateway-link.js";
import type { UpdateCheck } from "./updates.js";

export const FIRST_CHECK_MAX_MS = 60 * 60 * 1000;
/** setTimeout's longest delay; a longer CheckInterval checks this often (about 24 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The first check: one interval after ready, but never later than an hour. */
export const firstCheckDelay = (intervalMs: number) => Math.min(intervalMs, FIRST_CHECK_MAX_MS);

export interface UpdateState {
  /** The latest version announced. */
  announcedVersion?: string;
  announcedAt?: string;
}

export interface UpdateChecksOptions {
  intervalMs: number;
  check(): Promise<UpdateCheck>;
  /** `~/.app/update-state.json`. */
  statePath: string;
  /** Records the event; throws when it could not be recorded (then the next check tries again). */
  announce(update: UpdateAvailable): Promise<void>;
  /** Updates:NotifyChannels: the notice to connected channels (undefined: off, or no router yet). */
  notifyChannels?(text: string): Promise<void>;
  /** Updates:AutoApply: starts the apply flow. */
  apply?(update: UpdateAvailable): Promise<void>;
  log(level: "info" | "warn", message: string): void;
}

export interface UpdateChecks {
  /** The checks done so far (each settles before the next starts); for tests and status. */
  readonly checks: number;
  stop(): void;
}

export function readUpdateState(path: string): UpdateState {
  if (!existsSync(path)) return {};
  try {
    const state = JSON.parse(readFileSync(path, "utf8")) as unknown;
    return state && typeof state === "object" ? (state as UpdateState) : {};
  } catch {
    return {};
  }
}

async function writeUpdateState(path: string, state: UpdateState): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await rename(temp, path);
}

/** One check and what follows it. Never throws: failures are logged. */
export async function checkOnce(options: UpdateChecksOptions): Promise<void> {
  let result: UpdateCheck;
  try {
    result = await options.check();
  } catch (error) {
    options.log("warn", `update check failed, trying again in the next interval: ${(error as Error).message}`);
    return;
  }
  if (!result.updateAvailable) return;
  const update: UpdateAvailable = {
    currentVersion: result.currentVersion,
    latestVersion: result.latestVersion,
    packageId: result.packageId,
  };
  if (readUpdateState(options.statePath).announcedVersion !== update.latestVersion) {
    try {
      await options.announce(update);
      await writeUpdateState(options.statePath, { announcedVersion: update.latestVersion, announcedAt: new Date().toISOString() });
      options.log("info", `${update.packageId} ${update.latestVersion} is available (running ${update.currentVersion})`);
    } catch (error) {
      options.log("warn", `the update event could not be recorded, trying again in the next interval: ${(error as Error).message}`);
      return;
    }
    if (options.notifyChannels) {
      const text = `A new release of ${update.packageId} is available: ${update.latestVersion} (running ${update.currentVersion}).`;
      await options
        .notifyChannels(text)
        .catch((error: Error) => options.log("warn", `the update notice to channels failed: ${error.message}`));
    }
  }
  if (options.apply) {
    await options.apply(update).catch((error: Error) => options.log("warn", `applying ${update.latestVersion} failed: ${error.message}`));
  }
}

export function startUpdateChecks(options: UpdateChecksOptions): UpdateChecks {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let checks = 0;
  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(
      async () => {
        await checkOnce(options);
        checks++;
        schedule(options.intervalMs);
      },
      Math.min(delayMs, MAX_TIMER_MS),
    );
    // The checks never keep the process alive on their own.
    timer.unref();
  };
  schedule(firstCheckDelay(options.intervalMs));
  return {
    get checks() {
      return checks;
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
