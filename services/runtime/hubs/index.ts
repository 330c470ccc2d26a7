// Hub machinery a module configures: the connection tokens its hub connect rpc issues and admits,
// and the table their signing keys live in.
export {
  createHubConnectionTokens,
  DEFAULT_HUB_TOKEN_MAX_AGE_SECONDS,
  type HubConnectionTokenOptions,
  type HubConnectionTokens,
} from "./connection-tokens.js";
export { type HubTokenKeyRow, type HubTokenKeyTable, hubTokenKeys, type HubTokenKeysOptions, hubTokenKeyTable } from "./hub-token-keys.js";
export { HUB_CONNECTION_ID_HEADER, type HubClientCaller, hubClientOf, registerHubClient } from "./client-results.js";
