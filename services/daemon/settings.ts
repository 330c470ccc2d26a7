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

/**
 * `Bridge:*`: the daemon's WebSocket client of a third-party chat gateway. Enabled, AutoConnect,
 * DefaultMode and ChannelModes only seed `~/.app/bridge.json` the first time it is needed; from then
 * on `app-daemon bridge …` edits that file. Url and Token are read from the settings every time.
 */
export const bridgeSettings = z.object({
  enabled: setting.bool({ default: false, description: "Seeds bridge.json: whether the bridge is on." }),
  autoConnect: setting.bool({ default: false, description: "Seeds bridge.json: whether the daemon connects the bridge when it starts." }),
  defaultMode: setting.enum(["passthrough", "intercept"], {
    default: "passthrough",
    description:
      "Seeds bridge.json: the mode of a channel not in ChannelModes (Passthrough observes, Intercept answers with a Meshwork agent).",
  }),
  channelModes: setting.string({
    description: "Seeds bridge.json: modes per channel type, e.g. `telegram=Intercept,slack=Passthrough`.",
  }),
  url: setting.url({ protocols: ["ws:", "wss:"], description: "The chat gateway's WebSocket URL the bridge connects to." }),
  token: setting.string({ secret: true, description: "Sent as `auth.token` in the bridge's `connect` request." }),
});

export type BridgeSettings = z.output<typeof bridgeSettings>;
