// `app-daemon update` when the feed offers a newer release: (1) drain the running daemon through
// its control socket (readiness 503, new turns 503 with Retry-After, the turns in flight get up to
// Updates:DrainTimeout), (2) `npm install --global [--prefix Updates:InstallPrefix] <id>@<v>
// --registry <feed>`, (3) reconcile: the NEW version's own `app-daemon install` rewrites the
// service definition (only when one is installed), (4) restart through the service manager (only
// when the daemon was running). A failed step undoes the drain, so the old daemon serves again, and
// fails with one line naming the step.
//
// The feed token never goes on a command line (other users can read those): npm gets it from a
// temporary user config (mode 600, removed afterwards) holding only `//host/path/:_authToken`.
// The new version's bin is found through its installed package.json, and run with this node, so
// neither PATH nor a shebang matters under a service manager's bare environment.
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { callDaemon, queryDaemon } from "./control-socket.js";
import type { UpdateCheck } from "./updates.js";

const run = promisify(execFile);
/** npm gets this long; a feed that stops answering fails the step instead of holding the drain forever. */
const INSTALL_TIMEOUT_MS = 10 * 60 * 1000;

export interface ApplyOptions {
  check: UpdateCheck;
  feed: string;
  token?: string;
  installPrefix?: string;
  /** `~/.app/daemon.sock`. */
  socketPath: string;
  drainTimeoutMs: number;
  /** The settings flags the new version's `install` gets (the same the update was given). */
  flags: readonly string[];
  /** Whether a service definition is installed (else there is nothing to reconcile). */
  installed: boolean;
  /** Restarts the daemon through its service manager. */
  restart(): Promise<void>;
  node: string;
  platform: NodeJS.Platform;
  /** The npm to run; default: the one beside `node`, else `npm` on PATH. */
  npm?: string;
}

export class UpdateStepError extends Error {}

/** The one line worth showing of a failed command: npm's error line, else the first line. */
function reason(error: unknown): string {
  const stderr = String((error as { stderr?: unknown }).stderr ?? "");
  const lines = stderr
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
  // npm's first error line is its code (`npm error code E404`), the next one says what happened.
  const npmError = lines.filter(
    (l) => /^npm (error|ERR!)/.test(l) && !/A complete log|^npm (error|ERR!)\s*$|^npm (error|ERR!) (code|errno) /.test(l),
  );
  const line = npmError[0] ?? lines[0] ?? (error instanceof Error ? error.message.split("\n")[0] : String(error));
  return line!.slice(0, 300);
}

function npmBesideNode(node: string, platform: NodeJS.Platform): string {
  const beside = join(dirname(node), platform === "win32" ? "npm.cmd" : "npm");
  return existsSync(beside) ? beside : "npm";
}

/** `//host/path/:_authToken=` for the feed (npm's "nerf dart" key). */
export function authLine(feed: string, token: string): string {
  const url = new URL(feed);
  const path = url.pathname.endsWith("/") ? url.pathname : `${url.pathname}/`;
  return `//${url.host}${path}:_authToken=${token}\n`;
}

/** Where npm put the package: `<prefix>/lib/node_modules/<id>` (`<prefix>/node_modules/<id>` on Windows). */
export function installedPackageDir(prefix: string, packageId: string, platform: NodeJS.Platform): string {
  return platform === "win32" ? join(prefix, "node_modules", packageId) : join(prefix, "lib", "node_modules", packageId);
}

/** The installed package's `app-daemon` bin, checked to be the version asked for. */
function newBin(dir: string, version: string): string {
  const manifestPath = join(dir, "package.json");
  if (!existsSync(manifestPath)) throw new Error(`${manifestPath} is not there after the install`);
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { version?: string; bin?: string | Record<string, string> };
  if (manifest.version !== version) throw new Error(`${manifestPath} says version ${manifest.version}, not ${version}`);
  const bin = typeof manifest.bin === "string" ? manifest.bin : manifest.bin?.["app-daemon"];
  if (!bin) throw new Error(`${manifestPath} names no app-daemon bin`);
  return resolve(dir, bin);
}

/** Applies `options.check` (which must offer an update); answers the line to print. */
export async function applyUpdate(options: ApplyOptions): Promise<string> {
  const { check } = options;
  const npm = options.npm ?? npmBesideNode(options.node, options.platform);
  let drained = false;
  const step = async <T>(name: string, work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      let undo = "";
      if (drained) {
        undo = await callDaemon(options.socketPath, "POST", "/resume").then(
          () => "; the running daemon was resumed",
          (e: Error) => `; resuming the running daemon failed too (${e.message})`,
        );
      }
      throw new UpdateStepError(`update to ${check.latestVersion} failed at ${name}: ${reason(error)}${undo}`);
    }
  };

  const wasRunning = (await queryDaemon(options.socketPath)) !== undefined;
  if (wasRunning) {
    await step("drain", async () => {
      drained = true;
      await callDaemon(options.socketPath, "POST", "/drain", { timeoutMs: options.drainTimeoutMs }, options.drainTimeoutMs + 10_000);
    });
  }

  const prefix = await step("install", async () => {
    const scratch = await mkdtemp(join(tmpdir(), "app-daemon-update-"));
    try {
      const args = [
        "install",
        "--global",
        ...(options.installPrefix ? ["--prefix", options.installPrefix] : []),
        `${check.packageId}@${check.latestVersion}`,
        "--registry",
        options.feed,
        "--no-audit",
        "--no-fund",
        "--no-update-notifier",
      ];
      if (options.token) {
        const userConfig = join(scratch, "npmrc");
        await writeFile(userConfig, authLine(options.feed, options.token), { mode: 0o600 });
        args.push("--userconfig", userConfig);
      }
      await run(npm, args, { shell: options.platform === "win32", maxBuffer: 16 * 1024 * 1024, timeout: INSTALL_TIMEOUT_MS });
      return options.installPrefix ?? (await run(npm, ["prefix", "--global"], { shell: options.platform === "win32" })).stdout.trim();
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });

  if (options.installed) {
    await step("reconcile", async () => {
      const bin = newBin(installedPackageDir(prefix, check.packageId, options.platform), check.latestVersion);
      await run(options.node, [bin, "install", ...options.flags]);
    });
  }

  if (wasRunning) await step("restart", () => options.restart());
  return `${check.currentVersion} → ${check.latestVersion}`;
}
