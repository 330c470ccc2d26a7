// The tailnet CLI (Tools:MeshNetwork:CliPath) as mesh_status reads it: `<cli> status --json`,
// run without a shell, with a timeout. A missing CLI is not an error: cliAvailable is false.
import { execFile } from "node:child_process";
import type { ToolContext } from "../tool.js";
import { meshSettings } from "./config.js";

export const CLI_TIMEOUT_MS = 5000;

export interface CliStatus {
  cliAvailable: boolean;
  hostName: string | null;
  meshIp: string | null;
  backendState: string | null;
  cliError?: string;
}

export function cliStatus(ctx: ToolContext): Promise<CliStatus> {
  const cli = meshSettings(ctx).cliPath;
  return new Promise((resolve) => {
    execFile(
      cli,
      ["status", "--json"],
      { timeout: CLI_TIMEOUT_MS, maxBuffer: 4 * 1024 * 1024, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" } },
      (error, stdout) => {
        const none = { hostName: null, meshIp: null, backendState: null };
        if (error && (error as NodeJS.ErrnoException).code === "ENOENT") {
          resolve({ cliAvailable: false, ...none, cliError: `${cli} is not installed` });
          return;
        }
        let status: { BackendState?: unknown; Self?: { HostName?: unknown; TailscaleIPs?: unknown } } | undefined;
        try {
          status = JSON.parse(stdout) as typeof status;
        } catch {
          status = undefined;
        }
        if (!status) {
          resolve({
            cliAvailable: true,
            ...none,
            cliError: error ? `${cli} status failed: ${error.message.split("\n")[0]}` : `${cli} status --json answered no JSON`,
          });
          return;
        }
        const ips = Array.isArray(status.Self?.TailscaleIPs) ? (status.Self.TailscaleIPs as unknown[]) : [];
        resolve({
          cliAvailable: true,
          hostName: typeof status.Self?.HostName === "string" ? status.Self.HostName : null,
          meshIp: typeof ips[0] === "string" ? ips[0] : null,
          backendState: typeof status.BackendState === "string" ? status.BackendState : null,
        });
      },
    );
  });
}
