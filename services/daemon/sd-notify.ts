// sd_notify from the daemon: `KEY=value` lines to $NOTIFY_SOCKET (a path, or `@name` for an
// abstract socket). Node has no unix datagram sockets and the maintained bindings do not install
// here (node-unix-socket's prebuilt packages for other platforms are missing from the registry, so
// its lock file cannot be complete), so each message is sent by the `systemd-notify` binary; the
// unit says `NotifyAccess=all` so systemd takes messages from the daemon's children, and every
// READY=1 names the daemon with MAINPID. READY=1 once the mesh serves, STATUS= lines, STOPPING=1 at
// shutdown, WATCHDOG=1 every half WATCHDOG_USEC while it runs. Without NOTIFY_SOCKET every call
// does nothing.
import { execFile } from "node:child_process";

export interface Notifier {
  /** Sends `KEY=value` lines in one datagram; resolves when sent (never rejects: systemd may be gone). */
  notify(fields: Record<string, string | number>): Promise<void>;
  close(): void;
}

const silent: Notifier = { notify: async () => {}, close: () => {} };

export function systemdNotifier(
  env: NodeJS.ProcessEnv = process.env,
  onError: (error: Error) => void = () => {},
  program = "systemd-notify",
): Notifier {
  if (!env.NOTIFY_SOCKET) return silent;
  let watchdog: NodeJS.Timeout | undefined;
  const notifier: Notifier = {
    notify: (fields) =>
      new Promise((resolve) => {
        const args = Object.entries(fields).map(([key, value]) => `${key}=${String(value).replace(/\n/g, " ")}`);
        execFile(
          program,
          args,
          { env: { PATH: env.PATH, NOTIFY_SOCKET: env.NOTIFY_SOCKET }, timeout: 10_000 },
          (error, _stdout, stderr) => {
            if (error) onError(new Error(String(stderr).trim() || error.message));
            resolve();
          },
        );
      }),
    close: () => {
      if (watchdog) clearInterval(watchdog);
    },
  };
  const usec = Number(env.WATCHDOG_USEC);
  const forUs = !env.WATCHDOG_PID || Number(env.WATCHDOG_PID) === process.pid;
  if (Number.isFinite(usec) && usec > 0 && forUs) {
    watchdog = setInterval(() => void notifier.notify({ WATCHDOG: 1 }), Math.max(1, Math.floor(usec / 2000)));
    watchdog.unref();
  }
  return notifier;
}
