// Hub connection tokens a service's connect rpc (meshwork.api.v1 Hub.connect) issues and admits:
// `<connection id>.<issued at>.<HMAC-SHA256>` signed with a key every instance shares (kept in
// the mesh database by the module), so a token negotiated on one gateway opens a WebSocket on any
// other. Stateless: nothing is stored per connection.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { HubConnectRequest, HubConnectResponse } from "../../../gen/meshwork/api/v1/hubs_pb.js";

export const DEFAULT_HUB_TOKEN_MAX_AGE_SECONDS = 300;

export interface HubConnectionTokenOptions {
  /**
   * The signing keys, newest first: tokens are signed with the first and accepted when any
   * verifies (a rotated key keeps admitting the tokens it signed). Called per request, so a key
   * kept in the database can be loaded once and cached by the caller.
   */
  keys(): readonly Uint8Array[] | Promise<readonly Uint8Array[]>;
  /** How long after its negotiate a token opens a connection; default 5 minutes. */
  readonly maxAgeSeconds?: number;
  /** Tests. */
  readonly now?: () => number;
}

export interface HubConnectionTokens {
  /** The connect rpc itself: issues a connection for an empty token, admits a valid one. */
  connect(
    request: Pick<HubConnectRequest, "hub" | "connectionToken">,
  ): Promise<Pick<HubConnectResponse, "connectionId" | "connectionToken">>;
}

const TOKEN = /^([A-Za-z0-9_-]{22})\.([0-9a-z]{1,11})\.([A-Za-z0-9_-]{43})$/;

function mac(key: Uint8Array, hub: string, connectionId: string, issuedAt: string): string {
  return createHmac("sha256", key).update(`${hub}\n${connectionId}\n${issuedAt}`).digest("base64url");
}

export function createHubConnectionTokens(options: HubConnectionTokenOptions): HubConnectionTokens {
  const maxAgeMs = (options.maxAgeSeconds ?? DEFAULT_HUB_TOKEN_MAX_AGE_SECONDS) * 1000;
  const now = options.now ?? Date.now;
  const notFound = () => new ConnectError("No connection with that token: negotiate again.", Code.NotFound);

  return {
    async connect({ hub, connectionToken }) {
      const keys = await options.keys();
      if (keys.length === 0) throw new ConnectError("no hub token key is available", Code.Unavailable);
      if (connectionToken === "") {
        const connectionId = randomBytes(16).toString("base64url");
        const issuedAt = Math.floor(now() / 1000).toString(36);
        return { connectionId, connectionToken: `${connectionId}.${issuedAt}.${mac(keys[0]!, hub, connectionId, issuedAt)}` };
      }
      const match = TOKEN.exec(connectionToken);
      if (!match) throw notFound();
      const [, connectionId, issuedAt, presented] = match as unknown as [string, string, string, string];
      const age = now() - Number.parseInt(issuedAt, 36) * 1000;
      if (!(age >= -60_000 && age <= maxAgeMs)) throw notFound();
      const presentedBytes = Buffer.from(presented, "base64url");
      // Every key is compared, so the time says nothing about which one matched.
      let valid = false;
      for (const key of keys) {
        const expected = Buffer.from(mac(key, hub, connectionId, issuedAt), "base64url");
        if (expected.length === presentedBytes.length && timingSafeEqual(expected, presentedBytes)) valid = true;
      }
      if (!valid) throw notFound();
      return { connectionId, connectionToken };
    },
  };
}
