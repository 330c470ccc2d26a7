// The tracking_stream_token table: event stream tokens, by the SHA-256 of the token (never the
// token itself), so every instance accepts a token any of them issued.
import { EntitySchema } from "@mikro-orm/core";

export interface StreamTokenRow {
  /** Hex SHA-256 of the token. */
  tokenHash: string;
  expiresAt: Date;
  createdAt: Date;
}

export const StreamTokenEntity = new EntitySchema<StreamTokenRow>({
  name: "TrackingStreamToken",
  tableName: "tracking_stream_token",
  properties: {
    tokenHash: { type: "text", primary: true },
    expiresAt: { type: "Date", columnType: "timestamptz" },
    createdAt: { type: "Date", columnType: "timestamptz" },
  },
});
