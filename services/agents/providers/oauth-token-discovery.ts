// Where the assistant provider finds the user's OAuth token, first match wins: the OAuthToken
// setting, the ASSISTANT_TOKEN environment variable, the TokenFilePath file, then apps.json and
// hosts.json in the assistant's per-user config directory. Files hold `{ "<key>": { user,
// oauth_token } }`; the first oauth_token with the prefix (gho_) is taken. Tokens are never logged.
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";

export interface OAuthTokenSources {
  /** `Providers:<name>:OAuthToken`. */
  oauthToken?: string;
  /** The `ASSISTANT_TOKEN` environment variable, read by the config loader. */
  assistantTokenEnv?: string;
  /** `Providers:<name>:TokenFilePath`: a file in the apps.json format. */
  tokenFilePath?: string;
  /** The assistant's per-user config directory; `assistantConfigDir()` of this machine when absent. */
  configDir?: string;
  /** `Providers:<name>:OAuthTokenPrefix` (`gho_`), for the tokens read from files. */
  prefix?: string;
}

export type OAuthTokenSource = "OAuthToken" | "ASSISTANT_TOKEN" | "TokenFilePath" | "apps.json" | "hosts.json";

export interface DiscoveredOAuthToken {
  token: string;
  source: OAuthTokenSource;
}

/**
 * The per-user config directory the assistant's editor extensions write apps.json to:
 * `%LOCALAPPDATA%\github-copilot` on Windows, `$XDG_CONFIG_HOME/github-copilot` (default
 * `~/.config`) on macOS and Linux.
 */
export function assistantConfigDir(
  options: { platform?: NodeJS.Platform; env?: { XDG_CONFIG_HOME?: string; LOCALAPPDATA?: string }; homeDir?: string } = {},
): string {
  const platform = options.platform ?? process.platform;
  const home = options.homeDir ?? homedir();
  const env = options.env ?? {};
  if (platform === "win32") return join(env.LOCALAPPDATA || join(home, "AppData", "Local"), "github-copilot");
  return join(env.XDG_CONFIG_HOME || join(home, ".config"), "github-copilot");
}

export async function discoverOAuthToken(sources: OAuthTokenSources): Promise<DiscoveredOAuthToken | undefined> {
  const prefix = sources.prefix ?? "gho_";
  if (sources.oauthToken) return { token: sources.oauthToken, source: "OAuthToken" };
  if (sources.assistantTokenEnv) return { token: sources.assistantTokenEnv, source: "ASSISTANT_TOKEN" };
  if (sources.tokenFilePath) {
    const token = await tokenInFile(sources.tokenFilePath, prefix);
    if (token) return { token, source: "TokenFilePath" };
  }
  const dir = sources.configDir ?? assistantConfigDir();
  for (const file of ["apps.json", "hosts.json"] as const) {
    const token = await tokenInFile(join(dir, file), prefix);
    if (token) return { token, source: file };
  }
  return undefined;
}

/** The first `oauth_token` with the prefix in a file of the apps.json format; undefined when the file is absent, unreadable or has none. */
export async function tokenInFile(path: string, prefix: string): Promise<string | undefined> {
  let entries: unknown;
  try {
    entries = JSON.parse(await readFile(path, "utf8"));
  } catch {
    return undefined;
  }
  if (typeof entries !== "object" || entries === null || Array.isArray(entries)) return undefined;
  for (const entry of Object.values(entries)) {
    const token = typeof entry === "object" && entry !== null ? (entry as { oauth_token?: unknown }).oauth_token : undefined;
    if (typeof token === "string" && token.startsWith(prefix)) return token;
  }
  return undefined;
}
