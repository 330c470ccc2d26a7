// The channel leases: one instance at a time runs each platform adapter (Telegram's long poll,
// Slack's socket, Discord's gateway, Signal's event stream), the one holding the channel type's
// row in agents_channel_lease. Taking and renewing are one conditional upsert: it succeeds when the
// row is missing, ended (expires_at passed, by the database's clock, so instances' clocks do not
// matter) or already this instance's. A clean stop deletes this instance's rows, so another
// instance takes over at its next renewal; a holder that died is taken over once its lease ends.
import type { Database } from "../../runtime/database/index.js";
import { queryOn } from "../../runtime/outbox/sql.js";
import { LEASE_TABLE } from "../migrations/0010-channel-leases.js";

export interface LeaseTimings {
  /** How long a lease lasts from its last renewal. */
  ttlMs: number;
  /** How often the holder renews it and every other instance tries to take it. */
  renewMs: number;
}

/** A holder that died is taken over within ttl + renew (13 s), plus the adapter's handshake. */
export const CHANNEL_LEASE_TIMINGS: LeaseTimings = { ttlMs: 10_000, renewMs: 3_000 };

export interface ChannelLeases {
  readonly instanceId: string;
  /** Takes the lease of `type` (free or ended) or renews it (this instance's): answers whether this instance holds it now. */
  acquire(type: string): Promise<boolean>;
  /** Gives up this instance's lease of `type`, if it holds it. */
  release(type: string): Promise<void>;
  /** Gives up every lease this instance holds. */
  releaseAll(): Promise<void>;
  /** The instance holding a live lease of `type`, if any. */
  holder(type: string): Promise<string | undefined>;
}

export function createChannelLeases(db: Pick<Database, "em">, instanceId: string, ttlMs: number): ChannelLeases {
  const query = () => queryOn(db.em());
  return {
    instanceId,
    async acquire(type) {
      const rows = await query()<{ holder: string }>(
        `insert into "${LEASE_TABLE}" ("channel_type", "holder", "expires_at")
         values (?, ?, now() + ?::integer * interval '1 millisecond')
         on conflict ("channel_type") do update set "holder" = excluded."holder", "expires_at" = excluded."expires_at"
         where "${LEASE_TABLE}"."holder" = excluded."holder" or "${LEASE_TABLE}"."expires_at" <= now()
         returning "holder"`,
        [type, instanceId, Math.max(1, Math.round(ttlMs))],
      );
      return rows[0]?.holder === instanceId;
    },
    async release(type) {
      await query()(`delete from "${LEASE_TABLE}" where "channel_type" = ? and "holder" = ?`, [type, instanceId]);
    },
    async releaseAll() {
      await query()(`delete from "${LEASE_TABLE}" where "holder" = ?`, [instanceId]);
    },
    async holder(type) {
      const rows = await query()<{ holder: string }>(
        `select "holder" from "${LEASE_TABLE}" where "channel_type" = ? and "expires_at" > now()`,
        [type],
      );
      return rows[0]?.holder;
    },
  };
}
