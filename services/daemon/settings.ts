// `Daemon:*`: how app-daemon installs and supervises the agent gateway (issue 16). Declared in the
// agents module's settings, since the daemon runs the agent gateway.
import { z } from "zod";
import { setting } from "../runtime/config/index.js";

export const serviceManagers = ["auto", "systemd", "windows", "process"] as const;
export type ServiceManagerSetting = (typeof serviceManagers)[number];

export const daemonSettings = z.object({
  serviceManager: setting.enum(serviceManagers, {
    default: "auto",
    description:
      "What installs and supervises app-daemon: auto (systemd when /run/systemd/system exists, windows on Windows, else process), systemd, windows or process.",
  }),
  systemdRoot: setting.string({
    default: "/",
    description:
      "The root the systemd unit is written under (`<root>/etc/systemd/system/app-daemon.service`); another root than / is handled offline (`systemctl --root=`).",
  }),
  healthPort: setting.port({
    default: 18790,
    description: "In `serve` modes, the daemon's own /health, /health/ready and /health/live listen on this port.",
  }),
});

export type DaemonSettings = z.output<typeof daemonSettings>;
