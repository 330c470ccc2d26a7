// Live hubs of a front (SignalR JSON protocol over WebSockets), built from the contract's hub options.
export {
  createHubServer,
  DEFAULT_HUB_CLIENT_TIMEOUT_SECONDS,
  DEFAULT_HUB_HANDSHAKE_TIMEOUT_SECONDS,
  DEFAULT_HUB_KEEP_ALIVE_SECONDS,
  type HubServer,
  type HubServerOptions,
} from "./hub-server.js";
export { HUB_CONNECTION_HEADER } from "./hub-connection.js";
export { compileHubTable, type CompiledHub } from "./hub-table.js";
