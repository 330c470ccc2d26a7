// Tailnet (mesh network) tools on the Tailscale API v2 (Tools:MeshNetwork:ApiBaseUrl, tailnet
// Tools:MeshNetwork:Tailnet) and the CLI (Tools:MeshNetwork:CliPath): mesh_status, mesh_machines
// (online = connectedToControl), mesh_configure (mesh.json mode 600 without the credential; the
// credential goes to the credential store), mesh_runner_probe (GET http://{target}:{port}/health)
// and mesh_export. Credentials: see config.ts.
import { mkdir } from "node:fs/promises";
import { isIP } from "node:net";
import { join } from "node:path";
import { writeFileAtomic } from "../../credentials/atomic-file.js";
import { type ToolContext, type ToolSpec, ToolError } from "../tool.js";
import { listDevices, type Machine, machineOf } from "./api.js";
import { cliStatus } from "./cli.js";
import {
  type AuthMethod,
  CREDENTIAL_API_KEY,
  CREDENTIAL_CLIENT_ID,
  CREDENTIAL_CLIENT_SECRET,
  configDirOf,
  credentialStoreOf,
  MESH_FILE,
  type MeshFile,
  meshSettings,
  NO_CREDENTIAL,
  resolveConfig,
} from "./config.js";

export const PROBE_TIMEOUT_MS = 5000;
const FILTERS = ["online", "offline", "all"] as const;
const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

const configDir = { type: "string" as const, description: "Where mesh.json lives (default the data directory)." };

async function machines(ctx: ToolContext, dir: unknown): Promise<Machine[]> {
  const { credential, tailnet } = await resolveConfig(ctx, dir);
  if (!credential) throw new ToolError(NO_CREDENTIAL);
  return (await listDevices(credential, tailnet, ctx)).map(machineOf);
}

async function status(ctx: ToolContext, dir: unknown) {
  const [cli, config] = await Promise.all([cliStatus(ctx), resolveConfig(ctx, dir)]);
  return {
    ...cli,
    apiConfigured: config.credential !== undefined,
    authMethod: config.credential?.method ?? null,
    credentialSource: config.credential?.source ?? null,
    tailnet: config.tailnet,
    apiBaseUrl: meshSettings(ctx).apiBaseUrl,
  };
}

function probeUrl(target: string, port: number): URL {
  const host = target.trim().replace(/^\[|\]$/g, "");
  if (!(isIP(host) || HOST_NAME.test(host))) throw new ToolError(`target must be a host name or an IP address (got '${target}')`);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new ToolError("port must be from 1 to 65535");
  return new URL(`http://${isIP(host) === 6 ? `[${host}]` : host}:${port}/health`);
}

export const tailnetTools: ToolSpec[] = [
  {
    name: "mesh_status",
    description:
      "The tailnet's state here: CLI availability, whether API credentials are configured, this host's name and mesh IP, the backend state.",
    tier: "A",
    parameters: { type: "object", properties: { configDir } },
    async run(args, ctx) {
      return status(ctx, args.configDir);
    },
  },
  {
    name: "mesh_machines",
    description: "The machines of the tailnet (Tailscale API): [{ name, addresses, os, tags, online }].",
    tier: "A",
    parameters: {
      type: "object",
      properties: {
        filter: { type: "string", enum: [...FILTERS], default: "all", description: "online, offline or all." },
        tag: { type: "string", description: "Only machines with this tag (`tag:x` or `x`)." },
        configDir,
      },
    },
    async run(args, ctx) {
      const filter = String(args.filter ?? "all");
      if (!(FILTERS as readonly string[]).includes(filter)) throw new ToolError(`filter must be one of ${FILTERS.join(", ")}`);
      const tag = typeof args.tag === "string" && args.tag.trim() !== "" ? args.tag.trim() : undefined;
      const wanted = tag === undefined ? undefined : tag.startsWith("tag:") ? tag : `tag:${tag}`;
      return (await machines(ctx, args.configDir)).filter(
        (m) => (filter === "all" || m.online === (filter === "online")) && (wanted === undefined || m.tags.includes(wanted)),
      );
    },
  },
  {
    name: "mesh_configure",
    description:
      "Configure the tailnet API: writes mesh.json (mode 600, without the credential) and keeps the credential in the credential store. MESH_* environment variables, when set, take precedence.",
    tier: "C",
    parameters: {
      type: "object",
      properties: {
        tailnet: { type: "string", description: "The tailnet (`-` for the credential's own)." },
        authMethod: { type: "string", enum: ["oauth", "api-key"], description: "oauth (a client id and secret) or api-key." },
        credential: { type: "string", description: "The API key, or the OAuth client id." },
        clientSecret: { type: "string", description: "The OAuth client secret (required for oauth)." },
        configDir,
      },
      required: ["tailnet", "authMethod", "credential"],
    },
    async run(args, ctx) {
      const tailnet = String(args.tailnet).trim();
      if (tailnet === "" || /[/?#\s]/.test(tailnet)) throw new ToolError("tailnet must be a tailnet name (or - for the credential's own)");
      const authMethod = String(args.authMethod) as AuthMethod;
      if (authMethod !== "oauth" && authMethod !== "api-key") throw new ToolError("authMethod must be oauth or api-key");
      const credential = String(args.credential).trim();
      if (credential === "") throw new ToolError("credential must not be empty");
      const clientSecret = typeof args.clientSecret === "string" ? args.clientSecret.trim() : "";
      if (authMethod === "oauth" && clientSecret === "") throw new ToolError("clientSecret is required when authMethod is oauth");
      const store = credentialStoreOf(ctx);
      if (!store) throw new ToolError("the credential store is not available to tools in this process");
      const dir = configDirOf(ctx, args.configDir);
      if (authMethod === "api-key") {
        await store.set(CREDENTIAL_API_KEY, credential);
        await Promise.all([store.remove(CREDENTIAL_CLIENT_ID), store.remove(CREDENTIAL_CLIENT_SECRET)]);
      } else {
        await store.set(CREDENTIAL_CLIENT_ID, credential);
        await store.set(CREDENTIAL_CLIENT_SECRET, clientSecret);
        await store.remove(CREDENTIAL_API_KEY);
      }
      const file: MeshFile = { tailnet, authMethod, configuredAt: new Date().toISOString() };
      await mkdir(dir, { recursive: true });
      const path = join(dir, MESH_FILE);
      await writeFileAtomic(path, `${JSON.stringify(file, null, 2)}\n`, 0o600);
      return {
        configured: true,
        path: path.startsWith(ctx.services.workspace.root) ? ctx.services.workspace.display(path) : path,
        tailnet,
        authMethod,
        credentialStored: authMethod === "api-key" ? [CREDENTIAL_API_KEY] : [CREDENTIAL_CLIENT_ID, CREDENTIAL_CLIENT_SECRET],
      };
    },
  },
  {
    name: "mesh_runner_probe",
    description: "Probe a mesh runner: GET http://{target}:{port}/health → { reachable, status }.",
    tier: "C",
    parameters: {
      type: "object",
      properties: {
        target: { type: "string", description: "The runner's host name or IP address." },
        port: { type: "integer", default: 18789, description: "The runner's port." },
        configDir,
      },
      required: ["target"],
    },
    async run(args, ctx) {
      const url = probeUrl(String(args.target), typeof args.port === "number" ? args.port : 18789);
      const started = Date.now();
      try {
        const response = await fetch(url, {
          signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(ctx.timeoutMs ?? PROBE_TIMEOUT_MS)]),
          redirect: "manual",
        });
        await response.body?.cancel();
        return { url: url.href, reachable: true, status: response.status, healthy: response.ok, durationMs: Date.now() - started };
      } catch (error) {
        const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name;
        return { url: url.href, reachable: false, status: null, healthy: false, error: cause, durationMs: Date.now() - started };
      }
    },
  },
  {
    name: "mesh_export",
    description: "Export the tailnet's state as JSON: CLI status, API configuration, the machine list and counts.",
    tier: "A",
    parameters: { type: "object", properties: { configDir } },
    async run(args, ctx) {
      const state = await status(ctx, args.configDir);
      let list: Machine[] = [];
      let error: string | undefined;
      if (state.apiConfigured) {
        try {
          list = await machines(ctx, args.configDir);
        } catch (e) {
          if (!(e instanceof ToolError)) throw e;
          error = e.message;
        }
      }
      const online = list.filter((m) => m.online).length;
      return {
        exportedAt: new Date().toISOString(),
        cli: { available: state.cliAvailable, hostName: state.hostName, meshIp: state.meshIp, backendState: state.backendState },
        api: { configured: state.apiConfigured, authMethod: state.authMethod, tailnet: state.tailnet, ...(error ? { error } : {}) },
        machines: list,
        counts: { total: list.length, online, offline: list.length - online },
      };
    },
  },
];
