// Slack and Discord until their adapters land (issue 16, another part): listed by GET /api/channels
// with `configured` from their settings, so the list always has all five platforms. Connecting one
// that is configured answers 501 (not implemented yet); unconfigured, the registry answers 400
// naming the missing setting first.
import { Code, ConnectError } from "@connectrpc/connect";
import type { ChannelAdapter } from "./channel-adapter.js";

export function pendingChannel(
  type: string,
  displayName: string,
  required: Record<string, string | undefined>,
  autoConnect = false,
): ChannelAdapter {
  const notYet = () => new ConnectError(`the ${displayName} adapter is not available in this version`, Code.Unimplemented);
  return {
    type,
    displayName,
    connectedAtStart: autoConnect,
    missingSetting: () => Object.entries(required).find(([, value]) => value === undefined || value === "")?.[0],
    async connect() {
      throw notYet();
    },
    async disconnect() {},
    async send() {
      throw notYet();
    },
  };
}
