// Names of the remote MCP tools and servers. Canonical `mcp.<Name>.<tool>`; the function name is
// that with every character outside [A-Za-z0-9_-] as `_`, shortened past 64 characters exactly as
// the mesh RPC tools are (rpc/index.ts `functionNameOf`: 55 + `_` + 8 hex of the SHA-256; on a name
// with no `.` left it only shortens). The API key is `MCP:Servers` ApiKey, else the credential
// `mcp.<Name>`. The transport spellings are matched case-insensitively.
import { ConfigError } from "../../../runtime/config/index.js";
import { CREDENTIAL_NAME } from "../../credentials/index.js";
import type { McpServerSettings } from "../../settings.js";
import { functionNameOf } from "../rpc/index.js";

export type McpTransportKind = "streamable-http" | "sse";

const spellings: Record<string, McpTransportKind> = {
  http: "streamable-http",
  "streamable-http": "streamable-http",
  streamablehttp: "streamable-http",
  sse: "sse",
};

/** The server's transport (unset: streamable-http); a ConfigError naming the server for anything else. */
export function transportKindOf(server: McpServerSettings): McpTransportKind {
  if (server.transport === undefined || server.transport.trim() === "") return "streamable-http";
  const kind = spellings[server.transport.trim().toLowerCase()];
  if (kind) return kind;
  throw new ConfigError(
    `Invalid setting MCP:Servers (server ${JSON.stringify(server.name)}) Transport = ${JSON.stringify(server.transport)}: expected streamable-http (also http, streamableHttp) or sse.`,
  );
}

export function canonicalNameOf(server: string, tool: string): string {
  return `mcp.${server}.${tool}`;
}

export function functionNameOfRemote(canonical: string): string {
  return functionNameOf(canonical.replace(/[^A-Za-z0-9_-]/g, "_"));
}

/** The credential holding the server's key when MCP:Servers gives none; undefined when `Name` cannot be a credential name. */
export function credentialNameOf(server: string): string | undefined {
  const name = `mcp.${server}`;
  return CREDENTIAL_NAME.test(name) ? name : undefined;
}
