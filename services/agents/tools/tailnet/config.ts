// Where the tailnet tools find their API credential, first match wins: MESH_API_KEY; then
// MESH_OAUTH_CLIENT_ID with MESH_OAUTH_CLIENT_SECRET; then what mesh_configure stored (`mesh.json`
// in configDir names the tailnet and the method, the credential store holds the values). The
// configDir (default the data directory) must be in the workspace or the data directory.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { CredentialStore } from "../../credentials/index.js";
import { type ToolContext, ToolError } from "../tool.js";

export const MESH_FILE = "mesh.json";
export const CREDENTIAL_API_KEY = "mesh.api-key";
export const CREDENTIAL_CLIENT_ID = "mesh.oauth-client-id";
export const CREDENTIAL_CLIENT_SECRET = "mesh.oauth-client-secret";
export const NO_CREDENTIAL =
  "no tailnet API credential: set MESH_API_KEY, or MESH_OAUTH_CLIENT_ID and MESH_OAUTH_CLIENT_SECRET, or run mesh_configure";

export type AuthMethod = "api-key" | "oauth";

export interface MeshFile {
  tailnet: string;
  authMethod: AuthMethod;
  configuredAt: string;
}

export type MeshCredential =
  | { method: "api-key"; apiKey: string; source: "environment" | "mesh_configure" }
  | { method: "oauth"; clientId: string; clientSecret: string; source: "environment" | "mesh_configure" };

export interface MeshNetworkSettings {
  apiBaseUrl: string;
  tailnet: string;
  cliPath: string;
}

export const meshSettings = (ctx: ToolContext) => (ctx.settings as unknown as { meshNetwork: MeshNetworkSettings }).meshNetwork;

/** The process environment, or `services.environment` when a test gives one. */
export function environmentOf(ctx: ToolContext): Record<string, string | undefined> {
  return ctx.services.environment ?? process.env;
}

export function credentialStoreOf(ctx: ToolContext): CredentialStore | undefined {
  return ctx.services.credentials;
}

/** configDir resolved in the jail (the data directory allowed too); default the data directory. */
export function configDirOf(ctx: ToolContext, configDir: unknown): string {
  const given = typeof configDir === "string" && configDir.trim() !== "" ? configDir.trim() : ctx.settings.dataDir;
  return ctx.services.workspace.resolve(given, [ctx.settings.dataDir]);
}

export async function readMeshFile(dir: string): Promise<MeshFile | undefined> {
  let text: string;
  try {
    text = await readFile(join(dir, MESH_FILE), "utf8");
  } catch {
    return undefined;
  }
  try {
    const parsed = JSON.parse(text) as Partial<MeshFile>;
    if (typeof parsed.tailnet === "string" && (parsed.authMethod === "api-key" || parsed.authMethod === "oauth")) return parsed as MeshFile;
  } catch {
    // fall through
  }
  throw new ToolError(`${MESH_FILE} in the config directory is not a mesh configuration; run mesh_configure again`);
}

export interface ResolvedConfig {
  credential?: MeshCredential;
  tailnet: string;
}

/** The credential (when any) and the tailnet to use. */
export async function resolveConfig(ctx: ToolContext, configDir: unknown): Promise<ResolvedConfig> {
  const env = environmentOf(ctx);
  const settings = meshSettings(ctx);
  if (env.MESH_API_KEY)
    return { credential: { method: "api-key", apiKey: env.MESH_API_KEY, source: "environment" }, tailnet: settings.tailnet };
  if (env.MESH_OAUTH_CLIENT_ID && env.MESH_OAUTH_CLIENT_SECRET) {
    return {
      credential: {
        method: "oauth",
        clientId: env.MESH_OAUTH_CLIENT_ID,
        clientSecret: env.MESH_OAUTH_CLIENT_SECRET,
        source: "environment",
      },
      tailnet: settings.tailnet,
    };
  }
  const file = await readMeshFile(configDirOf(ctx, configDir));
  const store = credentialStoreOf(ctx);
  if (!file || !store) return { tailnet: settings.tailnet };
  if (file.authMethod === "api-key") {
    const apiKey = await store.get(CREDENTIAL_API_KEY);
    return { tailnet: file.tailnet, ...(apiKey ? { credential: { method: "api-key", apiKey, source: "mesh_configure" } } : {}) };
  }
  const [clientId, clientSecret] = await Promise.all([store.get(CREDENTIAL_CLIENT_ID), store.get(CREDENTIAL_CLIENT_SECRET)]);
  return {
    tailnet: file.tailnet,
    ...(clientId && clientSecret ? { credential: { method: "oauth", clientId, clientSecret, source: "mesh_configure" } } : {}),
  };
}
