// Access and refresh tokens: issuing a pair, rotating a refresh token, revoking a family, and the
// bearer verifier the auth interceptor asks. A family (sid) is one login and its refreshes;
// revoking it refuses its refresh token and its access tokens on every instance: the revocation
// is a row in PostgreSQL, checked on every call, and its event keeps each instance's set of
// revoked families (which answers without asking the database) current.
import { createHash, type KeyObject, randomBytes } from "node:crypto";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { fromBinary } from "@bufbuild/protobuf";
import type { EntityManager } from "@mikro-orm/postgresql";
import { Code } from "@connectrpc/connect";
import { TokenFamilyRevokedSchema } from "../../../gen/protection/v1/events_pb.js";
import type { BearerVerifier, Identity } from "../../runtime/auth/index.js";
import type { EventBus, Stoppable } from "../../runtime/bus/index.js";
import type { Database } from "../../runtime/database/index.js";
import type { Transaction, UnitOfWork } from "../../runtime/outbox/index.js";
import { refusal, unauthenticated } from "../errors.js";
import { protectionRoles, type ProtectionSettings } from "../settings.js";
import { type AccountRow, RefreshTokenEntity, RevokedFamilyEntity } from "../store/entities.js";
import { type AccessClaims, LEEWAY_SECONDS, type SigningKey, signAccessToken, verifyAccessToken } from "./jwt.js";
import { uuidv7 } from "../domain/ids.js";
import { protectionStream, subjects } from "../events/subjects.js";

const REFRESH_SHAPE = /^rtk_[0-9a-f]{64}$/;
const VERIFIED_CACHE_SIZE = 10_000;
const PRUNE_EVERY_MS = 60_000;

export interface TokenPair {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
}

/** The caller of a bearer call: its account, role and token family. */
export interface BearerIdentity extends Identity {
  readonly name: string;
  readonly role: string;
  readonly sid: string;
}

export interface TokenService {
  readonly key: SigningKey;
  /** A new pair for `account`; a new family unless `familyId` continues one. */
  issue(tx: Transaction, account: Pick<AccountRow, "id" | "role">, familyId?: string): Promise<TokenPair>;
  /** Exchanges a refresh token for a new pair (rotation); reuse revokes the family. */
  refresh(refreshToken: string, accountOf: (em: EntityManager, id: string) => Promise<AccountRow | null>): Promise<TokenPair>;
  /** Revokes a family in the transaction; every instance refuses its tokens once it commits. */
  revokeFamily(tx: Transaction, familyId: string, accountId: string, reason: string): Promise<void>;
  /** Revokes every family of the account not yet revoked (e.g. `password_reset`); answers how many. */
  revokeAccount(tx: Transaction, accountId: string, reason: string): Promise<number>;
  verifier: BearerVerifier;
  /** Follows revocations made by other instances. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface TokenServiceDeps {
  db: Database;
  uow: UnitOfWork;
  bus: EventBus;
  settings: ProtectionSettings;
  key: SigningKey;
  logger: { warn(obj: object, msg?: string): void };
}

export const hashRefreshToken = (token: string) => createHash("sha256").update(token).digest("hex");

export function createTokenService(deps: TokenServiceDeps): TokenService {
  const { jwt } = deps.settings.protection;
  const keys: ReadonlyMap<string, KeyObject> = new Map([[deps.key.kid, deps.key.publicKey]]);
  /** Families known to be revoked, with the time after which none of their tokens is valid anyway. */
  const revoked = new Map<string, number>();
  /** Verified tokens: the signature check is the costly part of a bearer call. */
  const verified = new Map<string, AccessClaims>();
  let subscription: Stoppable | undefined;
  const nowSeconds = () => Math.floor(Date.now() / 1000);

  const remember = (sid: string, untilMs: number) => {
    revoked.set(sid, untilMs);
    for (const [token, claims] of verified) if (claims.sid === sid) verified.delete(token);
  };

  function verifyCached(token: string): AccessClaims | undefined {
    const now = nowSeconds();
    const cached = verified.get(token);
    if (cached) {
      if (cached.exp + LEEWAY_SECONDS > now) return cached;
      verified.delete(token);
      return undefined;
    }
    const claims = verifyAccessToken(token, { keys, issuer: jwt.issuer, audience: jwt.audience, now });
    if (!claims) return undefined;
    if (verified.size >= VERIFIED_CACHE_SIZE) verified.delete(verified.keys().next().value!);
    verified.set(token, claims);
    return claims;
  }

  async function isRevoked(sid: string): Promise<boolean> {
    const known = revoked.get(sid);
    if (known !== undefined) {
      if (known > Date.now()) return true;
      revoked.delete(sid);
    }
    // Every authenticated call asks: a prepared primary-key read shared by the calls of one turn of
    // the event loop (byIdShared in prepared-reads.ts).
    const row = await deps.db.reads.byIdShared(RevokedFamilyEntity, sid);
    if (row) remember(sid, row.accessExpiresAt.getTime());
    return row !== null;
  }

  const accessLifetime = jwt.accessTokenLifetimeSeconds;
  let lastPrune = 0;

  /** Now and then, rows nothing can need any more: expired refresh tokens, revocations past their tokens' expiry. */
  async function prune(): Promise<void> {
    if (Date.now() - lastPrune < PRUNE_EVERY_MS) return;
    lastPrune = Date.now();
    const conn = deps.db.em().getConnection();
    const now = new Date();
    await conn.execute(`delete from "protection_refresh_token" where "expires_at" <= ?`, [now]);
    await conn.execute(`delete from "protection_revoked_family" where "access_expires_at" <= ?`, [now]);
    for (const [sid, until] of revoked) if (until <= now.getTime()) revoked.delete(sid);
  }

  const service: TokenService = {
    key: deps.key,

    async issue(tx, account, familyId = uuidv7()) {
      const now = new Date();
      const iat = Math.floor(now.getTime() / 1000);
      const accessToken = signAccessToken(deps.key, {
        sub: account.id,
        role: account.role,
        sid: familyId,
        iss: jwt.issuer,
        aud: jwt.audience,
        iat,
        exp: iat + accessLifetime,
      });
      const refreshToken = `rtk_${randomBytes(32).toString("hex")}`;
      tx.em.persist(
        tx.em.create(RefreshTokenEntity, {
          tokenHash: hashRefreshToken(refreshToken),
          familyId,
          accountId: account.id,
          expiresAt: new Date(now.getTime() + jwt.refreshTokenLifetimeDays * 86_400_000),
          usedAt: null,
          createdAt: now,
        }),
      );
      return { accessToken, refreshToken, expiresIn: accessLifetime };
    },

    async refresh(refreshToken, accountOf) {
      const invalid = () => unauthenticated("INVALID_REFRESH_TOKEN", "The refresh token is not valid.");
      const familyRevoked = () => unauthenticated("TOKEN_FAMILY_REVOKED", "The refresh token was already used; its sessions are revoked.");
      if (!REFRESH_SHAPE.test(refreshToken)) throw invalid();
      const tokenHash = hashRefreshToken(refreshToken);
      const outcome = await deps.uow.run(async (tx) => {
        const conn = tx.em.getConnection();
        const now = new Date();
        // The one statement that decides who wins: a token is used once, whoever asks at the same time.
        const won = await conn.execute<{ family_id: string; account_id: string }[]>(
          `update "protection_refresh_token" set "used_at" = ? where "token_hash" = ? and "used_at" is null and "expires_at" > ?
           returning "family_id", "account_id"`,
          [now, tokenHash, now],
          "all",
          tx.em.getTransactionContext(),
        );
        const row = won[0];
        if (row) {
          const gone = await conn.execute(
            `select 1 from "protection_revoked_family" where "family_id" = ?`,
            [row.family_id],
            "all",
            tx.em.getTransactionContext(),
          );
          if (gone.length) return "revoked" as const;
          const account = await accountOf(tx.em, row.account_id);
          if (!account) return "invalid" as const;
          return service.issue(tx, account, row.family_id);
        }
        const found = await tx.em.findOne(RefreshTokenEntity, { tokenHash });
        if (!found || found.expiresAt <= now) return "invalid" as const;
        // Used before: someone holds a copy. The whole family goes.
        await service.revokeFamily(tx, found.familyId, found.accountId, "reuse");
        return "revoked" as const;
      });
      if (outcome === "invalid") throw invalid();
      if (outcome === "revoked") throw familyRevoked();
      await prune().catch((err: unknown) => deps.logger.warn({ err }, "pruning expired tokens failed"));
      return outcome;
    },

    async revokeFamily(tx, familyId, accountId, reason) {
      const now = new Date();
      const accessExpiresAt = new Date(now.getTime() + (accessLifetime + LEEWAY_SECONDS) * 1000);
      const ctx = tx.em.getTransactionContext();
      const conn = tx.em.getConnection();
      const inserted = await conn.execute<{ family_id: string }[]>(
        `insert into "protection_revoked_family" ("family_id", "account_id", "reason", "access_expires_at", "revoked_at")
         values (?, ?, ?, ?, ?) on conflict ("family_id") do nothing returning "family_id"`,
        [familyId, accountId, reason, accessExpiresAt, now],
        "all",
        ctx,
      );
      await conn.execute(
        `update "protection_refresh_token" set "used_at" = coalesce("used_at", ?) where "family_id" = ?`,
        [now, familyId],
        "run",
        ctx,
      );
      if (inserted.length === 0) return;
      tx.record(TokenFamilyRevokedSchema, { accountId, sid: familyId, reason, accessExpiresAt: timestampFromDate(accessExpiresAt) });
      // This instance knows at once; the others when the event arrives, or on their next check.
      remember(familyId, accessExpiresAt.getTime());
    },

    async revokeAccount(tx, accountId, reason) {
      // A family lives as long as its newest refresh token row: a family whose rows were pruned
      // had its last access token expire long before.
      const families = await tx.em.getConnection().execute<{ family_id: string }[]>(
        `select distinct t."family_id" from "protection_refresh_token" t
         where t."account_id" = ? and not exists (select 1 from "protection_revoked_family" r where r."family_id" = t."family_id")`,
        [accountId],
        "all",
        tx.em.getTransactionContext(),
      );
      for (const { family_id } of families) await service.revokeFamily(tx, family_id, accountId, reason);
      return families.length;
    },

    verifier: {
      roles: protectionRoles,
      reasons: { missing: "UNAUTHORIZED", invalid: "INVALID_TOKEN" },
      async verify(token) {
        const claims = verifyCached(token);
        if (!claims) return undefined;
        if (await isRevoked(claims.sid)) return undefined;
        const identity: BearerIdentity = { authenticated: true, name: claims.sub, role: claims.role, scheme: "bearer", sid: claims.sid };
        return identity;
      },
    },

    async start() {
      await prune();
      subscription = await deps.bus.subscribe({ stream: protectionStream.name, filterSubjects: [subjects.tokenFamilyRevoked] }, (m) => {
        try {
          const event = fromBinary(TokenFamilyRevokedSchema, m.data);
          const until = event.accessExpiresAt ? Number(event.accessExpiresAt.seconds) * 1000 : Date.now() + accessLifetime * 1000;
          remember(event.sid, until);
        } catch (err) {
          deps.logger.warn({ err }, "undecodable token family revocation ignored");
        }
      });
    },

    async stop() {
      await subscription?.stop();
    },
  };
  return service;
}

/** The bearer caller of the current call (the auth interceptor put it there). */
export function bearerOf(identity: Identity): BearerIdentity {
  const caller = identity as Partial<BearerIdentity>;
  if (!identity.authenticated || !caller.name || !caller.sid) {
    throw refusal(Code.Unauthenticated, "UNAUTHORIZED", "This operation needs a bearer token.", { "www-authenticate": "Bearer" });
  }
  return caller as BearerIdentity;
}
